"""The model's state: what a CachePolicy holds, as plain data.

Keys are small ints (the harness maps them to real keys); blocks are not held
here, only the ref_cnt the manager last wrote. Plain ``dict``/``list`` on
purpose: CrossHair reasons symbolically about them, not about OrderedDict.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "IDLE",
    "IN_FLIGHT",
    "State",
    "is_idle",
    "is_in_flight",
    "is_present",
    "is_quiescent",
    "is_read",
    "well_formed",
]

IN_FLIGHT = -1
"""ref_cnt of a block whose store has not completed (not ready)."""
IDLE = 0
"""ref_cnt of a ready block that nobody is reading."""


@dataclass
class State:
    """A policy's state as the spec sees it (spec/state.md).

    ``refs`` maps every present key to the ref_cnt of its block.
    ``idle`` lists the keys marked evictable, least recent first; the core
    profile reads it as a set, the lru profile reads its order too.
    ``capacity`` is the ``cache_capacity`` the policy was built with: the
    manager never holds more blocks than that (spec/sources.md C1). None means
    unbounded (for model-only use).

    inv: well_formed(self)
    """

    refs: dict[int, int] = field(default_factory=dict)
    idle: list[int] = field(default_factory=list)
    capacity: int | None = None

    def copy(self) -> State:
        """A new state equal to this one, sharing no mutable part."""
        return State(dict(self.refs), list(self.idle), self.capacity)


def well_formed(state: State) -> bool:
    """The state invariant: ref counts are -1 or more, no more keys than the
    capacity, idle keys are distinct, present, and have ref_cnt 0."""
    if any(ref < IN_FLIGHT for ref in state.refs.values()):
        return False
    if state.capacity is not None and len(state.refs) > state.capacity:
        return False
    if len(set(state.idle)) != len(state.idle):
        return False
    return all(state.refs.get(key) == IDLE for key in state.idle)


def is_quiescent(state: State) -> bool:
    """Between two manager steps a key is idle exactly when its ref_cnt is 0
    (the manager marks every 0-transition at once, spec/sources.md C3/C4)."""
    idle = set(state.idle)
    return all((ref == IDLE) == (key in idle) for key, ref in state.refs.items())


def is_present(state: State, key: int) -> bool:
    """The key has been inserted and not removed, evicted or cleared."""
    return key in state.refs


def is_idle(state: State, key: int) -> bool:
    """The key is marked evictable (its block is ready and unread)."""
    return key in state.idle


def is_in_flight(state: State, key: int) -> bool:
    """The key's block is still being written (ref_cnt -1)."""
    return state.refs.get(key) == IN_FLIGHT


def is_read(state: State, key: int) -> bool:
    """The key's block is being read by at least one load (ref_cnt > 0)."""
    return state.refs.get(key, IN_FLIGHT) > IDLE
