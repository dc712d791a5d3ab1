"""Profiles are data: which requirements apply, and the refinement (if any)
that fixes the victims an eviction must return.

The engines are handed a ``Profile`` and never branch on its name: core has
no refinement (any allowed outcome is accepted, the lfu-cache pattern), lru
and arc plug in a ``Refinement`` that tracks its own extra state beside the
core model state and dictates the exact victims.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

from policyspec.model import State, eligible, lru_victims
from policyspec.model.actions import Action
from policyspec.model.arc import ARCRefinement
from policyspec.model.probe import Probe, ProbeResult

__all__ = [
    "PROFILES",
    "Diagnosis",
    "LRURefinement",
    "Profile",
    "Refinement",
    "get_profile",
    "register_profile",
]


class Refinement(Protocol):
    """Exact behaviour on top of core. ``ext`` is the refinement's own state
    (None when it needs none); every hook gets the core state *before* the
    operation and returns the new ``ext``. Hooks must not mutate arguments."""

    order_requirement: str
    """Reported when a policy's victims differ from the refinement's."""
    liveness_requirement: str
    """Reported (MUST) when a policy returns None but the refinement evicts."""

    def start(self, capacity: int) -> Any: ...
    def insert(self, ext: Any, state: State, key: int, ref_cnt: int) -> Any: ...
    def remove(self, ext: Any, state: State, key: int) -> Any: ...
    def touch(self, ext: Any, state: State, keys: Sequence[int]) -> Any: ...
    def mark_evictable(self, ext: Any, state: State, key: int) -> Any: ...
    def mark_non_evictable(self, ext: Any, state: State, key: int) -> Any: ...
    def evict(
        self, ext: Any, state: State, n: int, protected: Collection[int]
    ) -> tuple[Any, list[int] | None]: ...
    def clear(self, ext: Any, state: State) -> Any: ...
    def culprit(self, op: str) -> str:
        """The requirement broken when the eviction order first diverges
        right after an operation named ``op``."""
        ...


@runtime_checkable
class Diagnosis(Protocol):
    """Optional, for a refinement whose state the whole eviction order does
    not show (engines/explain.py uses it when a refinement has both
    methods; without them the probe is the whole eviction order and the
    requirement is ``culprit(op)``)."""

    def probes(self, ext: Any, state: State) -> Sequence[Probe]:
        """What to run after a prefix to compare the hidden state."""
        ...

    def blame(
        self, history: Sequence[Action], action: Action, ext: Any, state: State,
        results: Sequence[ProbeResult], previous: Sequence[ProbeResult],
    ) -> str | None:
        """The requirement ``action`` broke given the probes' results right
        after it and right before it (``previous``; ``ext``, ``state``: the
        refinement's and core state before it; ``history``: the actions
        before it), or None when they do not point at it."""
        ...


class LRURefinement:
    """The seed LRU: the order is the core state's idle list itself
    (spec/lru.md), so no extra state is needed."""

    order_requirement = "LRU-EVICT-ORDER"
    liveness_requirement = "LRU-LIVENESS"
    judged = (
        "LRU-INSERT-RECENCY", "LRU-MARK-RECENCY", "LRU-TOUCH-ORDER", "LRU-ORDER-KEPT",
        "MARK-EVICTABLE-ELIGIBLE",
    )
    """Every compared evict also judges the order these operations built and
    which keys they made eligible (a difference is traced back to one of
    them by explain.culprit)."""
    _CULPRITS: ClassVar[dict[str, str]] = {
        "insert": "LRU-INSERT-RECENCY",
        "mark_evictable": "LRU-MARK-RECENCY",
        "touch": "LRU-TOUCH-ORDER",
    }
    """Any other operation (an evict that reorders the rest among them) breaks
    LRU-ORDER-KEPT; an evict's own victims are judged as LRU-EVICT-ORDER."""

    def start(self, capacity: int) -> None:
        return None

    def insert(self, ext: None, state: State, key: int, ref_cnt: int) -> None:
        return None

    def remove(self, ext: None, state: State, key: int) -> None:
        return None

    def touch(self, ext: None, state: State, keys: Sequence[int]) -> None:
        return None

    def mark_evictable(self, ext: None, state: State, key: int) -> None:
        return None

    def mark_non_evictable(self, ext: None, state: State, key: int) -> None:
        return None

    def evict(
        self, ext: None, state: State, n: int, protected: Collection[int]
    ) -> tuple[None, list[int] | None]:
        return None, lru_victims(state, n, protected)

    def clear(self, ext: None, state: State) -> None:
        return None

    def culprit(self, op: str) -> str:
        return self._CULPRITS.get(op, "LRU-ORDER-KEPT")

    @staticmethod
    def order(state: State) -> list[int]:
        """Every eligible key in eviction order (for diagnostics)."""
        return eligible(state, ())


@dataclass(frozen=True)
class Profile:
    """A named set of requirements and the refinement that makes it exact."""

    name: str
    includes: tuple[str, ...]
    """Registry profiles whose requirements apply (lru includes core)."""
    refinement: Refinement | None = None
    description: str = ""

    @property
    def exact(self) -> bool:
        return self.refinement is not None


PROFILES: dict[str, Profile] = {}


def register_profile(profile: Profile) -> Profile:
    """Make a profile available to ``--profile NAME``."""
    if profile.name in PROFILES:
        raise ValueError(f"profile {profile.name!r} is already registered")
    PROFILES[profile.name] = profile
    return profile


def get_profile(name: str) -> Profile:
    """The registered profile called ``name``; ValueError names the choices."""
    try:
        return PROFILES[name]
    except KeyError:
        choices = ", ".join(sorted(PROFILES))
        raise ValueError(f"unknown profile {name!r} (choose from: {choices})") from None


register_profile(
    Profile("core", ("core",), None, "what every CachePolicy must do; victims are free")
)
register_profile(
    Profile("lru", ("core", "lru"), LRURefinement(), "exact seed-LRU victims and order")
)
register_profile(
    Profile("arc", ("core", "arc"), ARCRefinement(), "exact vLLM-ARC victims, ghosts and target")
)
register_profile(
    Profile("seed-errors", ("core", "seed-errors"), None,
            "core plus the seed LRU's KeyError on two caller mistakes (optional)")
)
register_profile(
    Profile("cost", ("core", "cost"), None,
            "core plus how running time grows with the cache and the work asked (SHOULD)")
)
