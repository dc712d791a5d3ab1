"""The eight CachePolicy operations as pure transitions (spec/*.md): each
takes a State and returns the new one (and the result), never mutating its
argument. Contracts are PEP 316 docstrings read by ``crosshair check``
rather than a runtime contract library: the model is checked only
symbolically, so runtime checks would cost the engines on every step, and
the postconditions stay ordinary typed functions the tests call. The idle
order kept is the seed LRU's (spec/lru.md); core reads ``idle`` as a set.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from policyspec.model.evict import commit_evict, evict_violation, lru_victims  # noqa: F401

# The contracts in the docstrings name these predicates; CrossHair evaluates
# them in this module's globals, hence the imports ruff cannot see used.
from policyspec.model.preconditions import (  # noqa: F401
    can_clear,
    can_evict,
    can_get,
    can_insert,
    can_mark_evictable,
    can_mark_non_evictable,
    can_remove,
    can_touch,
)
from policyspec.model.state import IDLE, State, is_idle, is_present, well_formed  # noqa: F401

__all__ = [
    "clear",
    "evict",
    "first_idle_is_most_recent",
    "get",
    "insert",
    "keeps_membership",
    "mark_evictable",
    "mark_non_evictable",
    "remove",
    "same_except",
    "touch",
]


def keeps_membership(before: State, after: State) -> bool:
    """Presence, ref counts and the idle set are unchanged (order may move)."""
    return before.refs == after.refs and set(before.idle) == set(after.idle)


def same_except(before: State, after: State, key: int) -> bool:
    """Every key other than ``key`` keeps its presence, ref_cnt and idle
    order."""
    others = {k: r for k, r in before.refs.items() if k != key}
    return others == {k: r for k, r in after.refs.items() if k != key} and [
        k for k in before.idle if k != key
    ] == [k for k in after.idle if k != key]


def first_idle_is_most_recent(before: State, keys: Sequence[int], after: State) -> bool:
    """After touch(keys), the first key of ``keys`` that was idle is the most
    recent idle key (the prefix head outlives its tail, vllm#39021)."""
    named = [k for k in keys if is_idle(before, k)]
    return not named or after.idle[-1] == named[0]


def get(state: State, key: int) -> bool:
    """GET-ABSENT: whether get(key) returns a block (True) or None (False).
    GET-KEEPS-MEMBERSHIP, GET-PURE: the state is not an output, get changes
    nothing.

    pre: can_get(state, key)
    post: __return__ == (key in state.refs)
    """
    return is_present(state, key)


def insert(state: State, key: int, ref_cnt: int) -> State:
    """INSERT-ADDS, INSERT-IN-FLIGHT-NOT-ELIGIBLE, LRU-INSERT-RECENCY.

    pre: can_insert(state, key, ref_cnt)
    post: __return__.refs.get(key) == ref_cnt
    post: same_except(state, __return__, key)
    post: (key in __return__.idle) == (ref_cnt == IDLE)
    post: ref_cnt != IDLE or __return__.idle[-1] == key
    post: well_formed(__return__)
    """
    after = state.copy()
    after.refs[key] = ref_cnt
    if ref_cnt == IDLE:
        after.idle.append(key)
    return after


def remove(state: State, key: int) -> State:
    """REMOVE-DROPS, LRU-ORDER-KEPT.

    pre: can_remove(state, key)
    post: key not in __return__.refs and key not in __return__.idle
    post: same_except(state, __return__, key)
    post: well_formed(__return__)
    """
    after = state.copy()
    del after.refs[key]
    if key in after.idle:
        after.idle.remove(key)
    return after


def touch(state: State, keys: Sequence[int]) -> State:
    """TOUCH-TOTAL, TOUCH-KEEPS-MEMBERSHIP, LRU-TOUCH-ORDER: walk the keys
    from last to first and move each idle key to the most recent end, so the
    first idle key named ends up most recent. Other keys are ignored.

    pre: can_touch(state, keys)
    post: keeps_membership(state, __return__)
    post: first_idle_is_most_recent(state, keys, __return__)
    post: well_formed(__return__)
    """
    after = state.copy()
    for key in reversed(list(keys)):
        if key in after.idle:
            after.idle.remove(key)
            after.idle.append(key)
    return after


def mark_evictable(state: State, key: int) -> State:
    """MARK-EVICTABLE-ELIGIBLE, MARK-KEEPS-MEMBERSHIP, LRU-MARK-RECENCY.

    pre: can_mark_evictable(state, key)
    post: __return__.idle[-1] == key
    post: __return__.refs == state.refs
    post: __return__.idle[:-1] == state.idle
    post: well_formed(__return__)
    """
    after = state.copy()
    after.idle.append(key)
    return after


def mark_non_evictable(state: State, key: int) -> State:
    """MARK-NON-EVICTABLE-PINS, MARK-KEEPS-MEMBERSHIP, LRU-ORDER-KEPT: the key
    leaves the idle list and loses its place.

    pre: can_mark_non_evictable(state, key)
    post: key not in __return__.idle
    post: __return__.refs == state.refs
    post: __return__.idle == [k for k in state.idle if k != key]
    post: well_formed(__return__)
    """
    after = state.copy()
    after.idle.remove(key)
    return after


def evict(
    state: State, n: int, protected: Collection[int]
) -> tuple[State, list[int] | None]:
    """EVICT-*, LRU-EVICT-ORDER, LRU-LIVENESS: the lru choice of victims,
    which is one of the outcomes core allows; None leaves the state as it was.

    pre: can_evict(state, n, protected)
    post: evict_violation(state, n, protected, __return__[1]) is None
    post: __return__[1] is not None or __return__[0] == state
    post: __return__[1] is None or __return__[0] == commit_evict(state, __return__[1])
    post: well_formed(__return__[0])
    """
    victims = lru_victims(state, n, protected)
    if victims is None:
        return state.copy(), None
    return commit_evict(state, victims), victims


def clear(state: State) -> State:
    """CLEAR-EMPTIES, CLEAR-FRESH: the state of a freshly built policy (of
    the same capacity).

    pre: can_clear(state)
    post: __return__ == State(capacity=state.capacity)
    """
    return State(capacity=state.capacity)
