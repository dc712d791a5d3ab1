"""vLLM's ``CachePolicy`` at every API revision (spec/contract.md), as typing
Protocols an author type-checks a policy against, and as data: ``REVISIONS``
is the single table the adapters detect revisions from, and the static
signature check ``policyspec check`` runs first reads it. Keys and blocks
are ``Any`` and parameters positional-only, because the manager passes
them positionally and neither vLLM type needs to be importable.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, cast

from policyspec.model.request import HOOKS
from policyspec.releases import RELEASES, Release

__all__ = [
    "API_HELP",
    "API_NAMES",
    "REVISIONS",
    "UNRELEASED",
    "CachePolicyR0",
    "CachePolicyR1",
    "CachePolicyR2",
    "CachePolicyR3",
    "CachePolicyR4",
    "CachePolicyR5",
    "CachePolicyR6",
    "CachePolicyR6Draft",
    "CachePolicyR7",
    "CachePolicyR7b",
    "CachePolicyR8",
    "CachePolicyR9",
    "CachePolicyR10",
    "CachePolicyRMinus1",
    "CallShape",
    "MethodSpec",
    "Revision",
    "SignatureProblem",
    "call_shape",
    "check_signatures",
    "emulated",
    "manager_release",
    "observation_hooks",
    "own_member",
    "signature_problems",
]

Victims = list[tuple[Any, Any]] | None


class CachePolicyRMinus1(Protocol):
    """R-1: the first CachePolicy, keyed by BlockHash (PR #37874, midway)."""

    def get(self, block_hash: Any, /) -> Any: ...
    def insert(self, block_hash: Any, block: Any, /) -> None: ...
    def remove(self, block_hash: Any, /) -> None: ...
    def touch(self, block_hashes: Iterable[Any], /) -> None: ...
    def evict(self, n: int, protected: set[Any], /) -> Victims: ...


class CachePolicyR0(Protocol):
    """R0: the six methods keyed by OffloadKey (``policies/abstract.py``)."""

    def get(self, key: Any, /) -> Any: ...
    def insert(self, key: Any, block: Any, /) -> None: ...
    def remove(self, key: Any, /) -> None: ...
    def touch(self, keys: Iterable[Any], /) -> None: ...
    def evict(self, n: int, protected: set[Any], /) -> Victims: ...


class CachePolicyR1(CachePolicyR0, Protocol):
    """R1: R0 moved to ``policies/base.py``; same methods."""


class CachePolicyR2(CachePolicyR1, Protocol):
    """R2: + ``clear()`` (PR #41956, reset_cache)."""

    def clear(self) -> None: ...


class CachePolicyR3(CachePolicyR2, Protocol):
    """R3, the seed: + ``mark_evictable`` / ``mark_non_evictable``."""

    def mark_evictable(self, key: Any, /) -> None: ...
    def mark_non_evictable(self, key: Any, /) -> None: ...


class _Marks(Protocol):
    def clear(self) -> None: ...
    def mark_evictable(self, key: Any, /) -> None: ...
    def mark_non_evictable(self, key: Any, /) -> None: ...


class CachePolicyR4(_Marks, Protocol):
    """R4: ``touch(keys, req_context)`` (PR #47744)."""

    def get(self, key: Any, /) -> Any: ...
    def insert(self, key: Any, block: Any, /) -> None: ...
    def remove(self, key: Any, /) -> None: ...
    def touch(self, keys: Iterable[Any], req_context: Any, /) -> None: ...
    def evict(self, n: int, protected: set[Any], /) -> Victims: ...


class CachePolicyR5(CachePolicyR4, Protocol):
    """R5: no change to the class (the policy factory arrived, PR #49114)."""


class CachePolicyR6(_Marks, Protocol):
    """R6: session-aware eviction (PR #50422)."""

    def get(self, key: Any, /) -> Any: ...
    def insert(self, key: Any, block: Any, /) -> None: ...
    def remove(self, key: Any, /) -> None: ...
    def touch(self, keys: Iterable[Any], req_context: Any, /) -> None: ...
    def evict(
        self, n: int, protected: set[Any], req_context: Any, num_blocks_in_cache: int, /
    ) -> Victims: ...
    def record_lookup(self, key: Any, req_context: Any, /) -> None: ...
    def on_request_finished(self, req_context: Any, /) -> None: ...
    def open_session(self, req_context: Any, num_blocks_in_cache: int, /) -> None: ...
    def close_session(self) -> None: ...


class CachePolicyR6Draft(_Marks, Protocol):
    """R6, first draft of PR #50422: request ids and start positions."""

    def get(self, key: Any, /) -> Any: ...
    def insert(self, key: Any, block: Any, /) -> None: ...
    def remove(self, key: Any, /) -> None: ...
    def touch(self, keys: Iterable[Any], req_context: Any, /) -> None: ...
    def evict(self, n: int, protected: set[Any], req_id: str, start_pos: int, /) -> Victims: ...
    def record_lookup(self, key: Any, req_id: str, /) -> None: ...
    def on_request_finished(self, req_id: str, /) -> None: ...
    def open_session(self, req_id: str, start_pos: int, /) -> None: ...
    def close_session(self) -> None: ...


class CachePolicyR7(_Marks, Protocol):
    """R7: chunks (``ChunkStatus``) and ``evict_until``."""

    def get(self, key: Any, /) -> Any: ...
    def insert(self, key: Any, chunk: Any, /) -> None: ...
    def remove(self, key: Any, /) -> None: ...
    def touch(self, keys: Iterable[Any], req_context: Any, /) -> None: ...
    def evict(self, n: int, protected: set[Any], /) -> Victims: ...
    def evict_until(
        self, can_fit: Callable[[list[tuple[Any, Any]]], bool], protected: set[Any], /
    ) -> Victims: ...


class CachePolicyR7b(_Marks, Protocol):
    """R7b: ``evict(n, protected, deprioritized)``."""

    def get(self, key: Any, /) -> Any: ...
    def insert(self, key: Any, chunk: Any, /) -> None: ...
    def remove(self, key: Any, /) -> None: ...
    def touch(self, keys: Iterable[Any], req_context: Any, /) -> None: ...
    def evict(self, n: int, protected: set[Any], deprioritized: set[Any], /) -> Victims: ...


class _RequestHooks(Protocol):
    """R8's request hooks, kept by R9."""

    def on_store_miss(self, keys: Iterable[Any], req_context: Any, /) -> None: ...
    def on_request_finished(
        self,
        key_groups: Sequence[Sequence[Any]],
        insertion_only_keys: set[Any],
        reused_keys: set[Any],
        req_context: Any,
        /,
    ) -> None: ...


class CachePolicyR8(_Marks, _RequestHooks, Protocol):
    """R8: request-scoped recency (PR #51787)."""

    def get(self, key: Any, /) -> Any: ...
    def insert(self, key: Any, chunk: Any, /) -> None: ...
    def remove(self, key: Any, /) -> None: ...
    def touch(self, keys: Iterable[Any], req_context: Any | None, /) -> None: ...
    def evict(self, n: int, protected: set[Any], /) -> Victims: ...


class CachePolicyR9(_Marks, _RequestHooks, Protocol):
    """R9, vLLM 0.33.0 (its PyPI wheel, ``cpu/policies/base.py``): ``insert``
    takes the storing request's ``req_context``; ``on_request_access`` is
    upstream (a no-op by default); ``touch`` as in R4."""

    def get(self, key: Any, /) -> Any: ...
    def insert(self, key: Any, chunk: Any, req_context: Any, /) -> None: ...
    def remove(self, key: Any, /) -> None: ...
    def touch(self, keys: Iterable[Any], req_context: Any, /) -> None: ...
    def evict(self, n: int, protected: set[Any], /) -> Victims: ...
    def on_request_access(self, keys: Iterable[Any], req_context: Any, /) -> None: ...


class CachePolicyR10(_Marks, Protocol):
    """R10, vLLM 0.34.0 (its PyPI wheel): ``touch`` is gone; recency and
    promotion come only from the request hooks, of which
    ``on_request_finished`` is abstract (the other two default to doing
    nothing)."""

    def get(self, key: Any, /) -> Any: ...
    def insert(self, key: Any, chunk: Any, req_context: Any, /) -> None: ...
    def remove(self, key: Any, /) -> None: ...
    def evict(self, n: int, protected: set[Any], /) -> Victims: ...
    def on_store_miss(self, keys: Iterable[Any], req_context: Any, /) -> None: ...
    def on_request_access(self, keys: Iterable[Any], req_context: Any, /) -> None: ...
    def on_request_finished(
        self,
        key_groups: Sequence[Sequence[Any]],
        insertion_only_keys: set[Any],
        reused_keys: set[Any],
        req_context: Any,
        /,
    ) -> None: ...


# -- the same revisions as data --------------------------------------------

Kind = Literal["core", "abstract", "hook"]


@dataclass(frozen=True)
class MethodSpec:
    """One method as a revision's manager calls it. ``core``: nothing can be
    checked without it; ``abstract``: the ABC requires it, a class without it
    is checked without it (its requirements do not apply); ``hook``: the ABC
    gives a default."""

    name: str
    params: tuple[str, ...]
    kind: Kind = "core"

    def call(self) -> str:
        return f"{self.name}({', '.join(self.params)})"


@dataclass(frozen=True)
class Revision:
    name: str
    summary: str
    methods: tuple[MethodSpec, ...]
    protocol: type
    chunks: bool = False
    """True when blocks are ``ChunkStatus`` (``chunk_id``)."""
    released: bool = True
    """False for the revisions that come from pull-request heads and are in
    no vLLM release up to 0.34.0 (R6, R7, R7b: spec/contract.md, API revisions)."""

    @property
    def touches(self) -> bool:
        """Whether its manager calls ``touch`` (every revision before R10)."""
        return self.method("touch") is not None

    @property
    def hooks(self) -> bool:
        """Whether its manager calls the request hooks (R8 and later)."""
        return self.method("on_store_miss") is not None

    def method(self, name: str) -> MethodSpec | None:
        return next((m for m in self.methods if m.name == name), None)


def _m(call: str, kind: Kind = "core") -> MethodSpec:
    name, _, rest = call.partition("(")
    params = tuple(p.strip() for p in rest.rstrip(")").split(",") if p.strip())
    return MethodSpec(name, params, kind)


_SIX = (_m("get(key)"), _m("insert(key, block)"), _m("remove(key)"))
_CLEAR = _m("clear()", "abstract")
_MARKS = (_m("mark_evictable(key)", "hook"), _m("mark_non_evictable(key)", "hook"))
_TOUCH_CTX = _m("touch(keys, req_context)")
_CHUNKS = (_m("get(key)"), _m("insert(key, chunk)"), _m("remove(key)"))
_FINISHED = _m(
    "on_request_finished(key_groups, insertion_only_keys, reused_keys, req_context)", "hook"
)

_TABLE: tuple[Revision, ...] = (
    Revision(
        "R-1",
        "CachePolicy in cpu_manager.py, keyed by BlockHash",
        (
            _m("get(block_hash)"),
            _m("insert(block_hash, block)"),
            _m("remove(block_hash)"),
            _m("touch(block_hashes)"),
            _m("evict(n, protected)"),
        ),
        CachePolicyRMinus1,
    ),
    Revision(
        "R0", "policies/abstract.py", (*_SIX, _m("touch(keys)"), _m("evict(n, protected)")),
        CachePolicyR0,
    ),
    Revision(
        "R1", "policies/base.py", (*_SIX, _m("touch(keys)"), _m("evict(n, protected)")),
        CachePolicyR1,
    ),
    Revision(
        "R2", "+ clear()", (*_SIX, _m("touch(keys)"), _m("evict(n, protected)"), _CLEAR),
        CachePolicyR2,
    ),
    Revision(
        "R3",
        "the seed: + mark_evictable / mark_non_evictable",
        (*_SIX, _m("touch(keys)"), _m("evict(n, protected)"), _CLEAR, *_MARKS),
        CachePolicyR3,
    ),
    Revision(
        "R4", "touch(keys, req_context)",
        (*_SIX, _TOUCH_CTX, _m("evict(n, protected)"), _CLEAR, *_MARKS), CachePolicyR4,
    ),
    Revision(
        "R5", "as R4 (policy factory)",
        (*_SIX, _TOUCH_CTX, _m("evict(n, protected)"), _CLEAR, *_MARKS), CachePolicyR5,
    ),
    Revision(
        "R6",
        "session-aware eviction",
        (
            *_SIX,
            _TOUCH_CTX,
            _m("evict(n, protected, req_context, num_blocks_in_cache)"),
            _CLEAR,
            *_MARKS,
            _m("record_lookup(key, req_context)", "hook"),
            _m("on_request_finished(req_context)", "hook"),
            _m("open_session(req_context, num_blocks_in_cache)", "hook"),
            _m("close_session()", "hook"),
        ),
        CachePolicyR6,
        released=False,
    ),
    Revision(
        "R6-draft",
        "session-aware eviction, first draft (request ids)",
        (
            *_SIX,
            _TOUCH_CTX,
            _m("evict(n, protected, req_id, start_pos)"),
            _CLEAR,
            *_MARKS,
            _m("record_lookup(key, req_id)", "hook"),
            _m("on_request_finished(req_id)", "hook"),
            _m("open_session(req_id, start_pos)", "hook"),
            _m("close_session()", "hook"),
        ),
        CachePolicyR6Draft,
        released=False,
    ),
    Revision(
        "R7",
        "chunks + evict_until(can_fit, protected)",
        (
            *_CHUNKS,
            _TOUCH_CTX,
            _m("evict(n, protected)"),
            _m("evict_until(can_fit, protected)", "hook"),
            _CLEAR,
            *_MARKS,
        ),
        CachePolicyR7,
        chunks=True,
        released=False,
    ),
    Revision(
        "R7b",
        "evict(n, protected, deprioritized)",
        (*_CHUNKS, _TOUCH_CTX, _m("evict(n, protected, deprioritized)"), _CLEAR, *_MARKS),
        CachePolicyR7b,
        chunks=True,
        released=False,
    ),
    Revision(
        "R8",
        "request-scoped recency: on_store_miss, on_request_finished",
        (
            *_CHUNKS,
            _TOUCH_CTX,
            _m("evict(n, protected)"),
            _CLEAR,
            *_MARKS,
            _m("on_store_miss(keys, req_context)", "hook"),
            _FINISHED,
        ),
        CachePolicyR8,
        chunks=True,
    ),
)


def _released(release: Release) -> Revision:
    """A release's revision, read from its folder's record
    (policyspec.releases); its Protocol class is the one above, or a
    bare stand-in class of the same name for a release this module does not
    spell out yet (mypy then checks nothing against it)."""
    name = f"CachePolicy{release.revision}"
    protocol = _PROTOCOLS.get(release.revision) or type(name, (), {"__module__": __name__})
    return Revision(release.revision, release.summary,
                    tuple(_m(call, _kind(kind, release)) for call, kind in release.methods),
                    protocol, chunks=True)


def _kind(kind: str, release: Release) -> Kind:
    if kind not in ("core", "abstract", "hook"):
        raise ValueError(f"{release.folder}: method kind {kind!r} is not core, abstract or hook")
    return cast(Kind, kind)


_PROTOCOLS: dict[str, type] = {"R9": CachePolicyR9, "R10": CachePolicyR10}
"""The revisions of shipped releases spelled out as Protocols above."""

_TABLE = (*_TABLE, *(_released(r) for r in RELEASES))

REVISIONS: dict[str, Revision] = {r.name: r for r in _TABLE}
"""Every revision policyspec can drive, oldest first."""

API_NAMES = tuple(REVISIONS)

UNRELEASED = tuple(r.name for r in _TABLE if not r.released)
"""The revisions no vLLM release contains (pull-request heads)."""

API_HELP = (
    f"force an API revision ({API_NAMES[0]}..{API_NAMES[-1]}) instead of detecting it; "
    f"{', '.join(UNRELEASED)} come from pull-request heads and never shipped in a vLLM release"
)
"""The ``--api`` help of every command that takes it."""


# -- static signature checks -----------------------------------------------


def _is_framework(klass: type) -> bool:
    """Classes whose methods are defaults, not the policy's own: object, ABC
    and Protocol machinery, the vLLM stand-ins and placeholders, and a real
    vLLM ``CachePolicy``."""
    if klass is object or klass.__module__ in ("abc", "typing", "builtins"):
        return True
    own = klass.__dict__
    if "_policyspec_standin" in own or "_policyspec_placeholder" in own:
        return True
    return klass.__name__ == "CachePolicy" and klass.__module__.startswith("vllm.")


def own_member(cls: type, name: str) -> object | None:
    """The raw class attribute ``name`` as the policy itself defines it (in
    ``cls`` or a non-framework base), or None."""
    for klass in cls.__mro__:
        if _is_framework(klass):
            continue
        if name in klass.__dict__:
            member: object = klass.__dict__[name]
            if getattr(member, "_policyspec_default", False):
                return None  # it inherits the base class's default (standins.intree)
            return member
    return None


@dataclass(frozen=True)
class CallShape:
    """What positional calls a method accepts (``self`` excluded)."""

    names: tuple[str, ...]
    required: int
    most: int | None
    """None: any number (``*args``)."""
    kwonly_required: tuple[str, ...] = ()

    def accepts(self, count: int) -> bool:
        return (
            not self.kwonly_required
            and self.required <= count
            and (self.most is None or count <= self.most)
        )

    def text(self) -> str:
        return f"({', '.join(self.names)})"


def call_shape(member: object) -> CallShape | None:
    """The call shape of a raw class attribute, or None when unknown."""
    drop = 1
    if isinstance(member, staticmethod):
        member, drop = member.__func__, 0
    elif isinstance(member, classmethod):
        member = member.__func__
    if not callable(member):
        return None
    try:
        params = list(inspect.signature(member).parameters.values())[drop:]
    except (TypeError, ValueError):
        return None
    positional = [
        p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    star = any(p.kind is p.VAR_POSITIONAL for p in params)
    return CallShape(
        names=tuple(
            ("*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD else "")
            + p.name
            for p in params
        ),
        required=sum(1 for p in positional if p.default is p.empty),
        most=None if star else len(positional),
        kwonly_required=tuple(
            p.name for p in params if p.kind is p.KEYWORD_ONLY and p.default is p.empty
        ),
    )


@dataclass(frozen=True)
class SignatureProblem:
    kind: Literal["missing", "missing-abstract", "parameters"]
    method: str
    message: str


def check_signatures(cls: type, api: str) -> list[SignatureProblem]:
    """Every way ``cls`` does not fit revision ``api``: core methods it lacks,
    methods the revision's ABC requires that it lacks, and methods whose
    parameter lists do not accept the revision's call."""
    revision = REVISIONS[api]
    problems: list[SignatureProblem] = []
    label = cls.__name__
    for spec in revision.methods:
        member = own_member(cls, spec.name)
        if member is None:
            if spec.kind == "core":
                problems.append(SignatureProblem(
                    "missing", spec.name, f"{label} has no {spec.call()} (required by {api})"
                ))
            elif spec.kind == "abstract":
                problems.append(SignatureProblem(
                    "missing-abstract",
                    spec.name,
                    f"{label} has no {spec.call()}, which {api} declares abstract; "
                    f"requirements that need it do not apply",
                ))
            continue
        shape = call_shape(member)
        if shape is not None and not shape.accepts(len(spec.params)):
            problems.append(SignatureProblem(
                "parameters",
                spec.name,
                f"{label}.{spec.name}{shape.text()} cannot be called as {spec.call()}, "
                f"as revision {api} calls it",
            ))
    return problems


def signature_problems(cls: type, api: str) -> list[str]:
    """``check_signatures`` as messages, each naming method and revision."""
    return [p.message for p in check_signatures(cls, api)]


def manager_release(api: str) -> Release | None:
    """The release whose manager policyspec emulates to drive a policy of
    API revision ``api`` (the vllm-manager and trace engines, ``record``,
    ``simulate``): the release that ships ``api``, or for an older revision
    with the request hooks (R8) the oldest release policyspec follows,
    whose manager calls the same hooks. None for a revision without the
    hooks: no emulated manager drives it, the engines call it directly."""
    revision = REVISIONS.get(api)
    if revision is None or not revision.hooks:
        return None
    return next((r for r in RELEASES if r.revision == api), RELEASES[0])


_MODELLED = frozenset({*HOOKS, "touch", "mark_evictable", "mark_non_evictable"})
"""The calls the model knows by name (model/request.py, model/actions.py)."""


def observation_hooks(api: str) -> tuple[str, ...]:
    """The hooks of revision ``api`` that the model does not know by name
    and that vLLM calls as ``hook(keys, req_context)``: a hook a release
    folder adds (``Release.methods``, kind hook). The engines drive each as
    an observation hook, the model action ``("hook", name, r, keys)``: any
    keys, of an open request, changing nothing the model holds
    (spec/request.md); empty for every revision without the request hooks."""
    revision = REVISIONS.get(api)
    if revision is None or not revision.hooks:
        return ()
    return tuple(m.name for m in revision.methods
                 if m.kind == "hook" and m.name not in _MODELLED
                 and m.params == ("keys", "req_context"))


def emulated(api: str, *, manager: bool = True) -> str:
    """What a run emulated for a policy of revision ``api``, in words: the
    vLLM release whose API it called and, when the run drove a manager
    (``manager``), whose manager. A verdict holds for the vLLM it was
    reached on, so every report and help names it."""
    shipped = next((r for r in RELEASES if r.revision == api), None)
    revision = REVISIONS.get(api)
    if shipped is not None:
        api_text = f"vLLM {shipped.version}'s API"
    elif revision is not None and not revision.released:
        api_text = "an API no vLLM release shipped"
    else:
        api_text = f"an API from before vLLM {RELEASES[0].version}"
    if not manager:
        return api_text
    release = manager_release(api)
    if release is None:
        return f"{api_text}; no release's manager emulated"
    if release is shipped:
        return f"vLLM {release.version}'s manager and API"
    return f"{api_text}, driven through vLLM {release.version}'s manager"
