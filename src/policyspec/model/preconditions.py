"""The caller contract: one named predicate per precondition (spec/*.md).

These predicates are the only definition of what a caller may do. The state
machines, the engines and the CrossHair contracts all call them; nothing
restates them.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from policyspec.model.state import IDLE, IN_FLIGHT, State, is_idle, is_present

__all__ = [
    "can_clear",
    "can_end_read",
    "can_evict",
    "can_finish_store",
    "can_get",
    "can_insert",
    "can_mark_evictable",
    "can_mark_non_evictable",
    "can_remove",
    "can_start_read",
    "can_touch",
]


def can_get(state: State, key: int) -> bool:
    """get may be called for any key, present or not (spec/sources.md C8)."""
    return True


def can_insert(state: State, key: int, ref_cnt: int) -> bool:
    """insert requires an absent key, room below the capacity (the manager
    evicts first, C1/C6), and a fresh block that is in flight (-1, what the
    manager always passes) or idle (0, the seed's other branch) (C2)."""
    if state.capacity is not None and len(state.refs) >= state.capacity:
        return False
    return not is_present(state, key) and ref_cnt in (IN_FLIGHT, IDLE)


def can_remove(state: State, key: int) -> bool:
    """remove requires a present key, in any state. The manager only removes
    in-flight keys (spec/sources.md C5); the policy API allows any."""
    return is_present(state, key)


def can_touch(state: State, keys: Sequence[int]) -> bool:
    """touch accepts any keys: absent, in flight, read, repeated (C7)."""
    return True


def can_mark_evictable(state: State, key: int) -> bool:
    """mark_evictable requires a present key whose block the manager has just
    set to ref_cnt 0 and that is not idle yet (spec/sources.md C3)."""
    return state.refs.get(key) == IDLE and not is_idle(state, key)


def can_mark_non_evictable(state: State, key: int) -> bool:
    """mark_non_evictable requires an idle key; the manager calls it before
    raising ref_cnt from 0 (spec/sources.md C4)."""
    return is_idle(state, key)


def can_evict(state: State, n: int, protected: Collection[int]) -> bool:
    """evict requires n >= 0; protected may name absent keys (C6)."""
    return n >= 0


def can_clear(state: State) -> bool:
    """clear may be called at any time, whatever the ref counts (C9)."""
    return True


# Manager-side transitions: writes of ref_cnt that the manager makes between
# policy calls. They are part of the caller contract because they decide what
# the policy may be asked next.


def can_finish_store(state: State, key: int) -> bool:
    """A store completes only for a present, in-flight block: ref_cnt -1 -> 0,
    followed at once by mark_evictable (spec/sources.md C3a)."""
    return state.refs.get(key) == IN_FLIGHT


def can_start_read(state: State, key: int) -> bool:
    """A load starts only on a ready block (ref_cnt >= 0); from 0 the manager
    first calls mark_non_evictable (spec/sources.md C4)."""
    return state.refs.get(key, IN_FLIGHT) >= IDLE


def can_end_read(state: State, key: int) -> bool:
    """A load completes only on a block being read (ref_cnt > 0); reaching 0
    is followed at once by mark_evictable (spec/sources.md C3b)."""
    return state.refs.get(key, IN_FLIGHT) > IDLE
