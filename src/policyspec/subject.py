"""The subject of a check: a policy class adapted to the seed API, plus how
to make its keys and blocks.

Engines never see a raw third-party class: the adapters (policyspec.adapters)
turn any supported API revision into a ``Subject`` whose ``build(capacity)``
speaks the seed (R3) interface.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Protocol

from policyspec.environment import Environment, LocalEnvironment
from policyspec.model.request import offload_key

__all__ = [
    "ALL_CAPABILITIES",
    "KNOWN_CAPABILITIES",
    "Block",
    "SeedPolicy",
    "Subject",
    "offload_key",
    "subject_from_class",
]

ALL_CAPABILITIES = frozenset({"clear", "mark", "touch"})
"""Optional parts of the seed API: ``clear`` (R2+), ``mark`` (mark_*, R3+),
``touch`` (every revision before R10: vLLM 0.34.0 removed it)."""
KNOWN_CAPABILITIES = ALL_CAPABILITIES | {"hooks", "isolated", "evict_until"}
"""Every capability a requirement may need: also ``hooks`` (the request
hooks of R8 and R9, vLLM 0.33), ``isolated`` (run under --isolate) and
``evict_until`` (R7)."""


class SeedPolicy(Protocol):
    """vLLM's CachePolicy at the seed revision R3 (spec/contract.md)."""

    def get(self, key: Any) -> Any: ...
    def insert(self, key: Any, block: Any) -> None: ...
    def remove(self, key: Any) -> None: ...
    def touch(self, keys: Any) -> None: ...
    def evict(self, n: int, protected: Any) -> Any: ...
    def clear(self) -> None: ...
    def mark_evictable(self, key: Any) -> None: ...
    def mark_non_evictable(self, key: Any) -> None: ...


class Block:
    """A plain block status: what vLLM's ``BlockStatus`` exposes (ref_cnt,
    block_id, is_ready), without ctypes so that it is cheap to make."""

    __slots__ = ("block_id", "ref_cnt")

    def __init__(self, ref_cnt: int, block_id: int) -> None:
        self.ref_cnt = ref_cnt
        self.block_id = block_id

    @property
    def is_ready(self) -> bool:
        return self.ref_cnt >= 0

    def __repr__(self) -> str:
        return f"Block(ref_cnt={self.ref_cnt}, block_id={self.block_id})"


@dataclass(frozen=True)
class Subject:
    """What the engines drive: a factory of seed-API policies and the ways to
    make the keys and blocks handed to it."""

    name: str
    build: Callable[[int], SeedPolicy]
    make_block: Callable[[int, int], Any] = Block
    make_key: Callable[[int], Hashable] = offload_key
    make_request: Callable[[str], Any] | None = None
    """Makes vLLM's ``ReqContext`` for a request id, for a policy that gets
    request hooks (capability ``hooks``); None otherwise."""
    api: str = "R3"
    capabilities: frozenset[str] = ALL_CAPABILITIES
    notes: tuple[str, ...] = field(default=())
    """Messages for the report (revision detected, warnings, ...)."""
    stand_in: bool = True
    """Install the vLLM stand-ins for the whole run when vLLM is missing
    (a policy may import ``vllm`` inside a method); False for a target
    loaded with ``--no-stand-in``."""
    fits: tuple[str, ...] = ()
    """Every API revision the class is a complete policy of, when it fits
    more than one and none was forced (R10 and R9: a vLLM 0.33 policy that
    defines its own finish); empty otherwise."""
    refit: Callable[[str], Subject] | None = None
    """The same class as a Subject driven as another revision of ``fits``
    (``fitted``); None when there is no choice."""
    placeholders: tuple[str, ...] = ()
    """Unmodelled vLLM names kept as inert placeholders for the whole check
    (``--placeholder``), qualified: the verdict holds with them."""
    argument_report: Callable[[], str | None] | None = None
    """None: the policy lives in this process and the harness compares the
    argument containers it handed over itself. For a policy in another
    process, which gets copies: a function giving what that process last
    reported about its own copies (None: nothing reported; "": unchanged; a
    sentence: what changed), see spec/protocol.md."""
    work_scale: float = 1.0
    """The share of a budget's work units this subject gets: 1 in this
    process; ``run.budget.PIPE_SCALE`` for a policy whose every call crosses
    a pipe (run.budget)."""
    environment: Callable[[], Environment] = LocalEnvironment
    """Makes the clock and random stream of a policy instance about to be
    built (``policyspec.environment``): in this process by default; a policy in
    another process gets the child's, driven through the line protocol."""
    source: str | None = None
    """The file that defines the policy's class, when known: how a fresh
    process reaches a class loaded under a name no import finds (its
    reproducing snippet is run in one, ``witness.shown``)."""

    def has(self, capability: str) -> bool:
        return capability in self.capabilities

    @property
    def in_child(self) -> bool:
        """The policy lives in another process (``--exec``, ``--isolate``):
        that process holds one policy at a time, and its end during a call
        is the policy's (API-PROCESS-ALIVE)."""
        return self.argument_report is not None

    def fitted(self, api: str | None) -> Subject:
        """This subject driven as revision ``api`` when it fits it and was
        chosen as another (a profile of one vLLM release names its
        revision: ``Profile.api``); itself otherwise."""
        if api is None or api == self.api or api not in self.fits or self.refit is None:
            return self
        return self.refit(api)


def subject_from_class(cls: Callable[..., Any], name: str | None = None) -> Subject:
    """A Subject for a class that already speaks the seed API, built as
    ``cls(cache_capacity=N)`` exactly as vLLM builds it (every seed
    capability: clear, mark and touch)."""

    def build(capacity: int) -> SeedPolicy:
        policy: SeedPolicy = cls(cache_capacity=capacity)
        return policy

    label = name or f"{getattr(cls, '__module__', '?')}:{getattr(cls, '__qualname__', cls)}"
    return Subject(name=label, build=build)


