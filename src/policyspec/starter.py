"""A starting policy for a vLLM API revision, written by ``policyspec new``.

The file is generated from ``protocols.REVISIONS`` (the revision's methods,
which of them are hooks with defaults, their parameter names) and from one
body per method name, so a new revision in that table needs no edit here
unless it adds a method name never seen before. The policy is a small
least-recently-used cache that passes core as written; its comments mark
where an author's choices go (spec/new.md).
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable
from dataclasses import dataclass

from policyspec.adapters.blocks import policy_home
from policyspec.protocols import REVISIONS, MethodSpec, Revision

__all__ = ["Starter", "class_name_for", "newest_released", "released", "starter"]

Body = Callable[[tuple[str, ...]], list[str]]


def released() -> tuple[str, ...]:
    """The revisions that shipped in a vLLM release, oldest first: the ones
    ``policyspec new --api`` offers."""
    return tuple(r.name for r in REVISIONS.values() if r.released)


def newest_released() -> str:
    """The default of ``policyspec new --api``."""
    return released()[-1]


def class_name_for(stem: str) -> str:
    """``my_lfu`` -> ``MyLfuPolicy``: the file's name in CamelCase, ending in
    ``Policy``. ValueError when no class name can be made of it."""
    words = [w for w in re.split(r"[^0-9A-Za-z]+", stem) if w]
    name = "".join(w[:1].upper() + w[1:] for w in words)
    if not name.endswith("Policy"):
        name += "Policy"
    if not name.isidentifier() or keyword.iskeyword(name) or name[0].isdigit():
        raise ValueError(f"cannot make a class name of {stem!r}: pass --class NAME")
    return name


# -- types of parameters and results, by parameter name -------------------------

_PARAM_TYPES = {
    "key": "Key", "block_hash": "Key",
    "keys": "Iterable[Key]", "block_hashes": "Iterable[Key]",
    "block": "Block", "chunk": "Block",
    "n": "int", "num_blocks_in_cache": "int", "start_pos": "int",
    "protected": "AbstractSet[Key]", "deprioritized": "AbstractSet[Key]",
    "insertion_only_keys": "AbstractSet[Key]", "reused_keys": "AbstractSet[Key]",
    "key_groups": "Sequence[Sequence[Key]]",
    "req_id": "str",
}
"""A parameter's type in the generated file; any other parameter is ``Any``
(vLLM's ``ReqContext``, ...)."""

_RESULT_TYPES = {"get": "Block | None", "evict": "list[tuple[Key, Block]] | None"}


def _param(name: str) -> str:
    return f"{name}: {_PARAM_TYPES.get(name, 'Any')}"


# -- bodies, by method name -----------------------------------------------------


def _get(p: tuple[str, ...]) -> list[str]:
    return [
        "# get must change nothing (GET-PURE, GET-KEEPS-MEMBERSHIP): a lookup is",
        "# not a use here; recency comes from the calls that use a key.",
        f"return self._blocks.get({p[0]})",
    ]


def _insert(p: tuple[str, ...]) -> list[str]:
    lines = [
        f"# A new {p[1]} arrives in flight (ref_cnt -1): it must not be evicted",
        "# before its store completes; evict below checks ref_cnt == 0.",
    ]
    if len(p) > 2:
        lines.append(f"# Your choice: {p[2]} says which request stored it (e.g. to rank it).")
    return [*lines, f"self._blocks[{p[0]}] = {p[1]}  # most recently used: the end"]


def _remove(p: tuple[str, ...]) -> list[str]:
    return [f"self._blocks.pop({p[0]}, None)"]


def _touch(p: tuple[str, ...]) -> list[str]:
    return [
        "# Your choice: what a use means. Here the touched keys become the most",
        "# recently used, the first one most of all. Unknown keys are ignored",
        "# (TOUCH-TOTAL); no key may appear or disappear (TOUCH-KEEPS-MEMBERSHIP).",
        f"self._use(reversed(list({p[0]})))",
    ]


def _evict(p: tuple[str, ...]) -> list[str]:
    return [
        "# Your choice: which idle blocks go. Here the least recently used ones.",
        "# The contract is not a choice: exactly n victims, each idle (ref_cnt 0)",
        "# and not protected, or None and no change at all (EVICT-ATOMIC).",
        f"if {p[0]} == 0:",
        "    return []",
        "victims: list[tuple[Key, Block]] = []",
        "for key, block in self._blocks.items():",
        f"    if block.ref_cnt == 0 and key not in {p[1]}:",
        "        victims.append((key, block))",
        f"        if len(victims) == {p[0]}:",
        "            break",
        "else:",
        "    return None",
        "for key, _ in victims:",
        "    del self._blocks[key]",
        "return victims",
    ]


def _clear(p: tuple[str, ...]) -> list[str]:
    return [
        "# Every block goes, whatever its ref_cnt, and so does any state kept about",
        "# keys (CLEAR-EMPTIES, CLEAR-FORGETS-KEYS): after it the policy is as new.",
        "self._blocks.clear()",
    ]


def _mark_evictable(p: tuple[str, ...]) -> list[str]:
    return [
        "# Your choice: vLLM calls this when the block's ref_cnt drops to 0. This",
        "# policy reads ref_cnt in evict instead, so there is nothing to do.",
        "return None",
    ]


def _mark_non_evictable(p: tuple[str, ...]) -> list[str]:
    return [
        "# Your choice: vLLM calls this when a load pins the idle block (ref_cnt",
        "# 0 -> 1). This policy reads ref_cnt in evict instead: nothing to do.",
        "return None",
    ]


def _finished(p: tuple[str, ...]) -> list[str]:
    return [
        "# Your choice: the request's recency, applied once when it finishes (vLLM's",
        "# scheduler no longer calls touch). Here every group's keys become the most",
        "# recently used, heads last so that a prefix's head outlives its tail;",
        f"# {p[1]} (stored by this request) and {p[2]}",
        "# (read by it) tell new keys from reused ones (ARC promotes the reused).",
        f"for group in {p[0]}:",
        "    self._use(reversed(list(group)))",
    ]


def _hook(p: tuple[str, ...]) -> list[str]:
    return ["# Your choice: vLLM's default does nothing here that core needs.", "return None"]


_BODIES: dict[str, Body] = {
    "get": _get,
    "insert": _insert,
    "remove": _remove,
    "touch": _touch,
    "evict": _evict,
    "clear": _clear,
    "mark_evictable": _mark_evictable,
    "mark_non_evictable": _mark_non_evictable,
    "on_request_finished": _finished,
}
"""The body of each method by name; a hook not listed gets ``_hook``."""


def _method(spec: MethodSpec) -> list[str]:
    result = _RESULT_TYPES.get(spec.name, "None")
    head = f"    def {spec.name}(" + ", ".join(["self", *map(_param, spec.params)])
    if len(head) + len(result) + 6 <= 88:
        signature = [f"{head}) -> {result}:"]
    else:
        signature = [f"    def {spec.name}(", "        self,",
                     *(f"        {_param(p)}," for p in spec.params), f"    ) -> {result}:"]
    why = {
        "hook": "A hook: vLLM's CachePolicy has a default, which this replaces.",
        "abstract": "Abstract in vLLM's CachePolicy: a policy must define it.",
    }.get(spec.kind, "Called by every revision's manager.")
    body = _BODIES.get(spec.name, _hook)(spec.params)
    return [*signature, f"        # {why}", *(f"        {line}" for line in body)]


@dataclass(frozen=True)
class Starter:
    """A generated policy: its source and the names to check it by."""

    revision: Revision
    class_name: str
    source: str


def starter(api: str, class_name: str, filename: str = "my_policy.py") -> Starter:
    """The starting policy for revision ``api`` (one that shipped in a vLLM
    release), to be saved as ``filename``. ValueError names the choices for
    any other revision."""
    if api not in released():
        raise ValueError(f"--api {api}: choose a revision that shipped in a vLLM release "
                         f"({', '.join(released())})")
    revision = REVISIONS[api]
    protocol = revision.protocol.__name__
    import policyspec.protocols

    typed = [
        f"    # mypy checks every method against revision {api}'s Protocol.",
        f"    from policyspec.protocols import {protocol} as CachePolicy",
    ] if hasattr(policyspec.protocols, protocol) else [
        f"    # policyspec spells out no Protocol of revision {api} yet.",
        f"    from {policy_home(api)} import CachePolicy",
    ]
    methods = [line for spec in revision.methods for line in ["", *_method(spec)]]
    source = "\n".join([
        f'"""{class_name}: a cache policy for vLLM\'s KV-cache CPU offloading, API',
        f"revision {api} ({revision.summary}).",
        "",
        "Started by `policyspec new --api " + api + "`: a least-recently-used cache that",
        "passes policyspec's core profile as written. Lines marked \"Your choice\" are",
        "where your policy's own ideas go; check it after every change with",
        "",
        f"    policyspec check {filename}:{class_name}",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from collections.abc import Iterable, Sequence",
        "from collections.abc import Set as AbstractSet",
        "from typing import TYPE_CHECKING, Any, TypeAlias",
        "",
        "if TYPE_CHECKING:",
        *typed,
        "else:",
        "    # vLLM loads this class by module path and wants a subclass of its",
        "    # CachePolicy; without vLLM, `policyspec check` provides the module.",
        f"    from {policy_home(api)} import CachePolicy",
        "",
        "Key: TypeAlias = Any",
        '"""vLLM\'s OffloadKey (bytes): compare and hash keys, never look inside."""',
        "Block: TypeAlias = Any",
        '"""The block status vLLM owns: read its ref_cnt (-1 in flight, 0 idle, > 0',
        'being read), never write it."""',
        "",
        "",
        f"class {class_name}(CachePolicy):",
        "    def __init__(self, cache_capacity: int) -> None:",
        "        self.cache_capacity = cache_capacity",
        "        # Your choice: the policy's state. Here one dict in recency order, least",
        "        # recently used first.",
        "        self._blocks: dict[Key, Block] = {}",
        *methods,
        "",
        "    def _use(self, keys: Iterable[Key]) -> None:",
        "        \"\"\"Make the present ones of ``keys`` the most recently used, in turn.\"\"\"",
        "        for key in keys:",
        "            if key in self._blocks:",
        "                self._blocks[key] = self._blocks.pop(key)",
        "",
        "",
        "if TYPE_CHECKING:",
        "    # mypy: the class defines every method the revision has (none abstract).",
        f"    _checked: type[CachePolicy] = {class_name}",
        "",
    ])
    return Starter(revision, class_name, source)
