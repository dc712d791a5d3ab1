"""Which API revision a policy class implements, read from the methods and
parameter lists the class itself defines (never from the defaults of the
``CachePolicy`` it derives from). Revisions mostly add to the interface, so
the newest feature present decides (spec/contract.md), and each reason
names the evidence. R10 removed ``touch``, so a class can fit R9 and R10:
``Detection.fits`` lists every revision it fits and the loader chooses.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from policyspec.protocols import REVISIONS, CallShape, call_shape, own_member
from policyspec.releases import RELEASES, installed_release

__all__ = ["FORK_HOOKS", "Detection", "block_kind", "choose_revision", "detect"]

FORK_HOOKS = {
    "demote": "Starwaves1 / abcd19886 forks",
    "iter_evictable": "Starwaves1 fork",
    "on_new_request": "T4t4KAU fork",
    "is_empty": "coltonottley fork",
    "select_evict_until": "coltonottley fork",
    "export_state": "ophirazulai hot-swap fork",
    "import_state": "ophirazulai hot-swap fork",
    "record_write_error": "ophirazulai hot-swap fork",
    "iter_keys": "aphrodite fork",
    "mark_gpu_resident": "aphrodite fork",
    "mark_gpu_evicted": "aphrodite fork",
    "segment_counts": "aphrodite fork",
    "set_gpu_residency_aware": "aphrodite fork",
}
"""Methods only fork variants define, and where they come from.
``on_request_access`` is not one of them any more: the ztysth fork had it
first, with a keyword ``inserted``; vLLM 0.33.0 (R9) made it upstream API
without that keyword. A class whose hook takes ``inserted`` is the fork's
and does not count as R9 evidence (``_ZTYSTH_NOTE``)."""

_ZTYSTH_NOTE = (
    "; its on_request_access takes the ztysth fork's keyword inserted "
    "(upstream R9 has no such keyword)"
)

_LATER_HOOKS = (
    "record_lookup",
    "open_session",
    "close_session",
    "on_request_finished",
    "on_store_miss",
    "on_request_access",
    "evict_until",
    *(h for r in RELEASES for h in r.evidence),
)


@dataclass(frozen=True)
class Detection:
    api: str
    reason: str
    hooks: tuple[str, ...]
    """Hooks of later revisions the class defines itself."""
    fork_hooks: tuple[str, ...]
    fits: tuple[str, ...] = ()
    """Every revision the class is a complete policy of, newest first, when
    it fits more than one (R10 and R9); empty otherwise."""


def _shape(cls: type, name: str) -> CallShape | None:
    member = own_member(cls, name)
    return None if member is None else call_shape(member)


def _home(cls: type) -> str:
    """The vLLM module the class's stand-in or real CachePolicy came from."""
    for klass in cls.__mro__:
        home = klass.__dict__.get("_policyspec_standin")
        if isinstance(home, str) and klass.__name__ == "CachePolicy":
            return home
        if klass.__name__ == "CachePolicy" and klass.__module__.startswith("vllm."):
            return klass.__module__
    return ""


def detect(cls: type) -> Detection:
    """The revision ``cls`` implements and the evidence for it."""
    hooks = tuple(h for h in _LATER_HOOKS if own_member(cls, h) is not None)
    forks = tuple(h for h in FORK_HOOKS if own_member(cls, h) is not None)
    api, reason = _decide(cls, set(hooks))
    if _ztysth_access(cls):
        reason += _ZTYSTH_NOTE
    fits: tuple[str, ...] = ()
    if api == "R9" and _finishes(cls):
        fits = ("R10", "R9")
        api = "R10"
        reason += (
            "; it also defines on_request_finished itself, so it is a complete R10 "
            "(vLLM 0.34.0) policy too, one that still defines touch"
        )
    return Detection(api, reason, hooks, forks, fits)


def _finishes(cls: type) -> bool:
    """True when the class defines ``on_request_finished(key_groups,
    insertion_only_keys, reused_keys, req_context)`` itself (R10 requires
    it: vLLM 0.34.0 made it abstract)."""
    finished = _shape(cls, "on_request_finished")
    return finished is not None and finished.accepts(4)


def _r10(cls: type) -> str | None:
    """Why ``cls`` is an R10 (vLLM 0.34.0) policy and no other, or None: it
    has no ``touch`` and either defines the request hooks' finish or has
    R9's evidence (which, without ``touch``, only R10 completes)."""
    if own_member(cls, "touch") is not None:
        return None
    insert = _shape(cls, "insert")
    if _finishes(cls) and (insert is None or insert.accepts(3)):
        return ("it defines on_request_finished(key_groups, insertion_only_keys, reused_keys, "
                "req_context) and no touch")
    why_r9 = _r9(cls)
    return None if why_r9 is None else f"{why_r9}, and it defines no touch"


def _ztysth_access(cls: type) -> bool:
    """True when ``on_request_access`` has the ztysth fork's ``inserted``."""
    access = _shape(cls, "on_request_access")
    return access is not None and "inserted" in access.names


def _r9(cls: type) -> str | None:
    """Why ``cls`` is an R9 (vLLM 0.33.0) policy, or None: ``insert``
    requires a third argument (the storing request's context), or the class
    defines the upstream ``on_request_access(keys, req_context)`` and its
    ``insert`` accepts that third argument."""
    insert = _shape(cls, "insert")
    if insert is not None and insert.required >= 3:
        return f"insert takes {insert.text()}"
    access = _shape(cls, "on_request_access")
    if (
        access is not None
        and not _ztysth_access(cls)
        and (insert is None or insert.accepts(3))
    ):
        return "it defines on_request_access and insert accepts a req_context"
    return None


def _by_evidence(cls: type) -> tuple[str, str] | None:
    """The newest release whose folder names evidence (a method no earlier
    revision has) that ``cls`` defines itself, and why; None when none."""
    for release in reversed(RELEASES):
        own = [name for name in release.evidence if own_member(cls, name) is not None]
        if own:
            return release.revision, (
                f"it defines {', '.join(own)}, new in {release.revision} (vLLM {release.version})")
    return None


def _decide(cls: type, hooks: set[str]) -> tuple[str, str]:
    newer = _by_evidence(cls)
    if newer is not None:
        return newer
    touch = _shape(cls, "touch")
    evict = _shape(cls, "evict")
    finished = _shape(cls, "on_request_finished")
    extra = evict.names[2 : evict.required] if evict else ()
    why_r10 = _r10(cls)
    if why_r10 is not None:
        return "R10", why_r10
    why_r9 = _r9(cls)
    if why_r9 is not None:
        return "R9", why_r9
    if "on_store_miss" in hooks or (finished is not None and finished.required >= 4):
        return "R8", "it defines R8's request hooks (on_store_miss / on_request_finished)"
    if extra and extra[0] == "deprioritized":
        return "R7b", "evict takes (n, protected, deprioritized)"
    if extra and extra[0] == "req_id":
        return "R6-draft", "evict takes (n, protected, req_id, start_pos)"
    if len(extra) == 2 or "open_session" in hooks:
        return "R6", "evict takes (n, protected, req_context, num_blocks_in_cache)"
    if "evict_until" in hooks:
        return "R7", "it defines evict_until(can_fit, protected)"
    if block_kind(cls, None) == "chunk":
        return "R7", "it stores ChunkStatus records (chunks)"
    if touch is not None and touch.required >= 2:
        if _optional_none(cls):
            return "R8", "touch takes (keys, req_context | None)"
        return "R4", "touch takes (keys, req_context)"
    if own_member(cls, "mark_evictable") or own_member(cls, "mark_non_evictable"):
        return "R3", "it defines mark_evictable / mark_non_evictable"
    if own_member(cls, "clear") is not None:
        return "R2", "it defines clear()"
    # Among the six original methods only the module CachePolicy comes from
    # tells R-1, R0 and R1 apart; that import is evidence, a parameter name
    # is at most a hint (forks kept block_hash names long after R0).
    home = _home(cls)
    if home.endswith("cpu_manager"):
        return "R-1", f"it has the six original methods and its CachePolicy comes from {home}"
    if home.endswith("policies.abstract"):
        return "R0", f"it has the six original methods and its CachePolicy comes from {home}"
    if home.endswith("policies.base"):
        return "R1", f"it has the six original methods and its CachePolicy comes from {home}"
    get = _shape(cls, "get")
    if get is not None and get.names[:1] == ("block_hash",):
        return "R-1", (
            "it has the six original methods, no vLLM CachePolicy base, and get's parameter "
            "is named block_hash (R-1's BlockHash keys)"
        )
    return "R1", "it has the six original methods only (no vLLM CachePolicy base to date it)"


def _optional_none(cls: type) -> bool:
    """True when touch annotates its req_context as optional (R8)."""
    member = own_member(cls, "touch")
    annotations = getattr(member, "__annotations__", {})
    text = str(annotations.get("req_context", ""))
    return "None" in text or "Optional" in text


def block_kind(cls: type, api: str | None) -> str:
    """"chunk" when the class works on ``ChunkStatus``, else "block": read
    from what its module imported, then from ``insert``'s parameter name,
    then from the revision."""
    module = sys.modules.get(cls.__module__)
    names = vars(module) if module is not None else {}
    has_chunk, has_block = "ChunkStatus" in names, "BlockStatus" in names
    if has_chunk != has_block:
        return "chunk" if has_chunk else "block"
    insert = _shape(cls, "insert")
    if insert is not None and len(insert.names) > 1:
        if insert.names[1] == "chunk":
            return "chunk"
        if insert.names[1] == "block":
            return "block"
    if api is not None and REVISIONS[api].chunks:
        return "chunk"
    return "block"


def choose_revision(
    found: Detection, api: str | None = None, prefer: str | None = None
) -> tuple[str, str]:
    """The revision to drive a class detected as ``found`` as, and the note
    that says why: the forced one; else, for a class that fits several, the
    profile's, then the installed vLLM's, then the newest; else the detected
    one. Every command and the guard choose with this one function, so a
    file is driven the same way whichever of them runs it."""
    if api is not None:
        return api, f"API revision {api} forced (detection says {found.api}: {found.reason})"
    if not found.fits:
        return found.api, f"API revision {found.api} detected: {found.reason}"
    installed = installed_release()
    if prefer in found.fits:
        chosen, why = prefer, "the revision of the profile's vLLM release"
    elif installed is not None and installed[1] is not None and (
        installed[1].revision in found.fits
    ):
        chosen, why = installed[1].revision, f"the installed vLLM {installed[0]}'s revision"
    else:
        chosen = found.fits[0]
        why = "the newest it fits" + (
            " (no vLLM is installed)" if installed is None
            else f" (the installed vLLM {installed[0]} is not a release policyspec knows)"
            if installed[1] is None else "")
    others = ", ".join(
        f"--api {r} drives it as {_as_release(r)} does" for r in found.fits if r != chosen)
    return chosen, (f"API revision {chosen} chosen, {why}: the policy fits "
                    f"{' and '.join(found.fits)} ({found.reason}); {others}")


def _as_release(revision: str) -> str:
    release = next((r for r in RELEASES if r.revision == revision), None)
    return f"vLLM {release.series}" if release else f"revision {revision}"
