"""From a target string or a class to a ``Subject`` the engines can drive.

Order of work, each step before anything of the policy runs: parse the
target; import it (vLLM stand-ins installed only if vLLM is absent and
allowed); find the class; arm the placeholders; detect (or take the forced)
API revision; check signatures statically (missing core methods are a
``TargetError``, other mismatches become notes); check that the class is
built as ``Class(cache_capacity=N)``; then wrap it for the seed API.
"""

from __future__ import annotations

import ast
import inspect
import os
import sys
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any

from policyspec.adapters import compat
from policyspec.adapters.blocks import block_factory, block_type, req_context_class
from policyspec.adapters.errors import TargetError
from policyspec.adapters.revisions import FORK_HOOKS, block_kind, choose_revision, detect
from policyspec.adapters.seed import HOOK_REVISIONS, adapt
from policyspec.adapters.target import import_target, parse_target, resolve_class, where_raised
from policyspec.protocols import API_NAMES, REVISIONS, check_signatures, own_member
from policyspec.subject import SeedPolicy, Subject, offload_key
from policyspec.vllm import standins
from policyspec.vllm.standins import intree
from policyspec.vllm.standins.gaps import gap_of
from policyspec.vllm.standins.placeholders import LoadRecord, PlaceholderUsedError, keeps

__all__ = ["load_subject", "subject_for_class"]

_REQUEST_ID = "policyspec-req-0"


def load_subject(
    target: str,
    *,
    stand_in: bool = True,
    api: str | None = None,
    capacity_probe: int = 4,
    prefer: str | None = None,
    placeholders: Sequence[str] = (),
) -> Subject:
    """The Subject for ``pkg.module:Class`` or ``path/to/file.py:Class``.

    ``stand_in=False`` never installs the vLLM stand-ins (a file that needs
    vLLM then fails with a TargetError when vLLM is absent); ``api`` forces
    an API revision (``--api``); ``prefer`` is the revision to drive a
    policy that fits several as (the profile's, ``Profile.api``);
    ``placeholders`` are unmodelled vLLM names kept inert for the whole
    check (``--placeholder``: each must match a name the policy uses while
    it loads). Raises TargetError for every user mistake.
    """
    parsed = parse_target(target)
    _check_api(api)
    notes: list[str] = []
    guard: AbstractContextManager[LoadRecord | None] = (
        standins.installed(placeholders) if stand_in else nullcontext(None)
    )
    with guard as record, compat.provided() as shims:
        module = import_target(parsed)
        cls = resolve_class(module, parsed)
        if shims.used:
            notes.append(
                f"Python {sys.version_info.major}.{sys.version_info.minor} has no "
                f"{', '.join(shims.used)} (3.12+): policyspec provided it while loading; "
                "it only marks methods for type checkers"
            )
        if record is not None:
            record.arm()
            notes.append("vLLM is not installed: the policy ran against policyspec's stand-ins")
            armed = [n for n in record.names if not record.inert(n)]
            if armed:
                notes.append(_placeholder_note(armed))
        elif standins.vllm_importable() and _uses_vllm(module):
            notes.append("vLLM is installed: the policy ran against its own modules")

        def finish(subject: Subject) -> Subject:
            if placeholders:
                subject = _kept(subject, placeholders, record)
            return subject if stand_in else replace(subject, stand_in=False)

        subject = finish(_subject(cls, api, target, capacity_probe, notes, prefer))
        refit = subject.refit
        if refit is None:
            return subject
        return replace(subject, refit=lambda other: finish(refit(other)))


def _kept(subject: Subject, asked: Sequence[str], record: LoadRecord | None) -> Subject:
    """``subject`` with the placeholders ``--placeholder`` kept inert, named
    in a note; TargetError for a name that matches none the policy used."""
    if record is None:
        return replace(subject, notes=(
            *subject.notes, f"--placeholder {', '.join(asked)}: no effect, the policy ran "
            "against vLLM's own modules (no placeholders)"))
    kept = record.kept_names()
    for name in asked:
        if not any(keeps(name, k) for k in kept):
            used = ", ".join(record.names) or "none"
            raise TargetError(
                f"--placeholder {name}: the policy uses no unmodelled vLLM name {name} while "
                f"it loads (unmodelled names it uses: {used})"
            )
    note = (
        f"kept as inert placeholders for the whole check (--placeholder): {', '.join(kept)}; "
        "every use of them did nothing, so the verdict holds with these placeholders, "
        "not with vLLM's real objects"
    )
    return replace(subject, notes=(*subject.notes, note), placeholders=tuple(kept))


def subject_for_class(
    cls: type, *, api: str | None = None, capacity_probe: int = 4, prefer: str | None = None
) -> Subject:
    """The Subject for a class given directly (pytest plugin, library use)."""
    if not isinstance(cls, type):
        raise TargetError(f"{cls!r} is not a class")
    _check_api(api)
    name = f"{cls.__module__}:{cls.__qualname__}"
    return _subject(cls, api, name, capacity_probe, [], prefer)


def _check_api(api: str | None) -> None:
    if api is not None and api not in API_NAMES:
        raise TargetError(f"unknown API revision {api!r}; known: {', '.join(API_NAMES)}")


def _uses_vllm(module: object) -> bool:
    return any(
        getattr(v, "__module__", "").startswith("vllm") or getattr(v, "__name__", "") == "vllm"
        for v in vars(module).values()
    )


def _placeholder_note(names: list[str]) -> str:
    shown = [n for n in names if not any(o.startswith(n + ".") for o in names)]
    return (
        "vLLM names the stand-ins do not model are inert placeholders: "
        f"{', '.join(shown)} (using one during the check fails naming it)"
    )


def _subject(
    cls: type,
    api: str | None,
    name: str,
    capacity_probe: int,
    notes: list[str],
    prefer: str | None = None,
) -> Subject:
    label = cls.__name__
    given = tuple(notes)
    found = detect(cls)
    chosen, how = choose_revision(found, api, prefer)
    notes.insert(0, how)
    if chosen in REVISIONS and not REVISIONS[chosen].released:
        notes.insert(1, f"API revision {chosen} never shipped in a vLLM release: it comes from "
                        "a pull-request head")
    problems = check_signatures(cls, chosen)
    missing = [p.method for p in problems if p.kind == "missing"]
    if missing:
        unmodelled = [b for b in cls.__mro__ if standins.is_placeholder(b)]
        if unmodelled:
            base = getattr(unmodelled[0], "_policyspec_placeholder", unmodelled[0].__name__)
            raise TargetError(
                f"{label} lacks {', '.join(missing)}: it derives from {base}, which "
                "policyspec's vLLM stand-ins do not model (they model upstream vLLM's "
                "CachePolicy, LRUCachePolicy and ARCCachePolicy; spec/placeholders.md), so "
                "nothing it inherits is there; check the policy where vLLM is installed"
            )
        how = "forced with --api" if api else "detected; --api forces another"
        raise TargetError(
            f"{label} lacks {', '.join(missing)}, required by API revision {chosen} ({how}); "
            + _no_revision_fits(cls)
        )
    notes.extend(p.message for p in problems)
    _check_constructor(cls, label, capacity_probe)

    capabilities = set()
    if own_member(cls, "clear") is not None:
        capabilities.add("clear")
    elif not any(p.method == "clear" for p in problems):
        notes.append(f"{label} has no clear(): requirements that need clear do not apply")
    if own_member(cls, "mark_evictable") or own_member(cls, "mark_non_evictable"):
        capabilities.add("mark")
    else:
        notes.append(
            f"{label} defines no mark_evictable / mark_non_evictable: eligibility follows "
            "ref_cnt, and requirements that need mark do not apply"
        )
    if own_member(cls, "evict_until") is not None:
        capabilities.add("evict_until")
    if REVISIONS[chosen].touches:
        capabilities.add("touch")
    else:
        notes.append(f"API revision {chosen} has no touch: vLLM's manager never calls it, and "
                     "requirements that need touch do not apply")
    if chosen in HOOK_REVISIONS:
        capabilities.add("hooks")
    if found.hooks:
        notes.append(f"hooks the policy defines: {', '.join(found.hooks)}")
    if found.fork_hooks:
        forks = ", ".join(f"{h} ({FORK_HOOKS[h]})" for h in found.fork_hooks)
        notes.append(f"fork-variant methods seen, not called: {forks}")

    kind = block_kind(cls, chosen)
    make_block = block_factory(block_type(cls, chosen, kind))
    if kind == "chunk":
        notes.append("blocks are ChunkStatus records (chunk_id)")
    fits = found.fits if api is None else ()

    def refit(other: str) -> Subject:
        return _subject(cls, None, name, capacity_probe, list(given), other)

    return Subject(
        name=name,
        fits=fits,
        refit=refit if fits else None,
        build=_builder(cls, chosen, "evict_until" in capabilities),
        make_block=make_block,
        make_key=offload_key,
        make_request=req_context_class() if chosen in HOOK_REVISIONS else None,
        api=chosen,
        capabilities=frozenset(capabilities),
        notes=tuple(notes),
        source=_defining_file(cls),
    )


def _defining_file(cls: type) -> str | None:
    """The ``.py`` file that defines ``cls``, or None (built in, made in
    memory): its module's file, else (a module loaded without a place in
    ``sys.modules``) the file of a function the class itself defines."""
    try:
        where: str | None = inspect.getsourcefile(cls)
    except (TypeError, OSError):
        where = None
    if where is None:
        for member in vars(cls).values():
            code = getattr(inspect.unwrap(member), "__code__", None) if callable(member) else None
            if code is not None:
                where = code.co_filename
                break
    return where if where is not None and where.endswith(".py") else None


def _no_revision_fits(cls: type) -> str:
    """What a class that fits no revision has, the revision it comes nearest
    to, and where to look next: the vLLM it was written for may be newer
    than every revision policyspec knows (``policyspec drift``)."""
    methods = sorted(
        n for n in dir(cls) if not n.startswith("_") and callable(own_member(cls, n))
    )

    def misfit(name: str) -> tuple[int, int, int]:
        kinds = [p.kind for p in check_signatures(cls, name)]
        return kinds.count("missing"), kinds.count("parameters"), kinds.count("missing-abstract")

    # The newest of the revisions with the fewest core methods missing, then
    # the fewest parameter lists that do not fit.
    nearest = min(reversed(API_NAMES), key=misfit)
    short = check_signatures(cls, nearest)
    lacks = [p.method for p in short if p.kind == "missing"]
    other = [p.method for p in short if p.kind == "parameters"]
    fit = "; ".join(
        [f"it lacks {', '.join(lacks)}"] * bool(lacks)
        + [f"its {', '.join(other)} take{'s' * (len(other) == 1)} other parameters"]
        * bool(other)
    ) or "it fits it"
    return (
        f"it defines {', '.join(methods) or 'no public methods'}; the nearest revision "
        f"policyspec knows is {nearest} ({fit}); if it was written for a newer vLLM, run "
        "`policyspec drift` to compare the installed vLLM with the revisions policyspec knows"
    )


def _builder(cls: type, api: str, has_evict_until: bool) -> Any:
    ctx_cls = req_context_class()

    def build(capacity: int) -> SeedPolicy:
        policy = cls(cache_capacity=capacity)
        intree.drive_as(policy, api)
        return adapt(policy, api, ctx_cls(_REQUEST_ID), has_evict_until=has_evict_until)

    return build


def _check_constructor(cls: type, label: str, capacity: int) -> None:
    """TargetError when ``cls(cache_capacity=N)`` cannot even be called, or
    when building it raises (a vLLM name the stand-ins do not model, an
    import or a name that fails, any other exception): nothing could be
    checked, so the check would only list NOT TESTED rows or blame each
    requirement for the constructor. A constructor that raises only at
    other capacities is built again by the engines and judged there."""
    try:
        signature: inspect.Signature | None = inspect.signature(cls)
    except (TypeError, ValueError):
        signature = None
    if signature is not None:
        try:
            signature.bind(cache_capacity=capacity)
        except TypeError:
            raise TargetError(
                f"{label}{signature} does not accept cache_capacity: vLLM builds every "
                f"policy as {label}(cache_capacity=N)"
            ) from None
    try:
        cls(cache_capacity=capacity)
    except PlaceholderUsedError as exc:
        raise TargetError(_unmodelled(cls, label, capacity, exc)) from None
    except (ImportError, NameError) as exc:
        where = where_raised(exc.__traceback__, _source_file(cls))
        raise TargetError(
            f"{where}{label}(cache_capacity={capacity}) cannot be built: "
            f"{type(exc).__name__}: {exc}"
        ) from None
    except TypeError as exc:
        if exc.__traceback__ is not None and exc.__traceback__.tb_next is None:
            raise TargetError(
                f"{label}(cache_capacity={capacity}) cannot be built: {exc}"
            ) from None
        raise TargetError(_raising(cls, label, capacity, exc)) from None
    except (Exception, SystemExit) as exc:
        raise TargetError(_raising(cls, label, capacity, exc)) from None


def _raising(cls: type, label: str, capacity: int, exc: BaseException) -> str:
    """One line for a constructor that raises as vLLM calls it: where, and
    the exception. vLLM could not build it either, so no requirement can be
    judged; a stand-in's missing attribute is named as policyspec's gap."""
    gap = gap_of(exc, f"building {label}(cache_capacity={capacity})")
    if gap is not None:
        return gap
    where = where_raised(exc.__traceback__, _source_file(cls))
    text = str(exc).splitlines()[0] if str(exc) else ""
    return (
        f"{where}{label}(cache_capacity={capacity}) raised {type(exc).__name__}"
        f"{': ' + text if text else ''}: vLLM builds every policy so, and nothing can be "
        "checked until that call returns"
    )


def _source_file(cls: type) -> str | None:
    module = sys.modules.get(cls.__module__)
    where = getattr(module, "__file__", None)
    return str(Path(where).resolve()) if isinstance(where, str) else None


def _unmodelled(cls: type, label: str, capacity: int, exc: PlaceholderUsedError) -> str:
    """One line: which vLLM name building the policy used, where the policy
    file imports it, and why the stand-ins cannot give it."""
    path = _source_file(cls)
    where = where_raised(exc.__traceback__, path)
    imported = _import_of(path, exc.name) if path else None
    if imported is None:
        name, module, at = exc.name, exc.name.rpartition(".")[0], ""
    else:
        name, module, line = imported
        at = f" at {os.path.relpath(path) if path else '?'}:{line}"
    if module in standins.MODELED:
        why = (
            f"policyspec's stand-in for {module} does not define it (it models upstream "
            "vLLM's names there: a fork's name?); check the policy where the vLLM that has "
            "it is installed"
        )
    else:
        why = (
            f"policyspec's vLLM stand-ins do not model {module}; check the policy where vLLM "
            "is installed"
        )
    short = name.split("(")[0].rsplit(".", 1)[-1]
    return f"{where}building {label}(cache_capacity={capacity}) uses {name}, imported from " \
        f"{module}{at}: {why}, or check it with an inert placeholder for it " \
        f"(--placeholder {short}; the verdict then says so)"


def _import_of(path: str, used: str) -> tuple[str, str, int] | None:
    """(the name as the file imports it, its module, the import's line) of
    the import statement in ``path`` that brought in the placeholder
    ``used`` (a qualified name, maybe with ``.attr`` or ``(...)`` after)."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if used == full or used.startswith((full + ".", full + "(")):
                    return alias.name, node.module, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if used.startswith(alias.name + "."):
                    rest = used[len(alias.name) + 1 :].split(".")[0].split("(")[0]
                    return rest, alias.name, node.lineno
    return None
