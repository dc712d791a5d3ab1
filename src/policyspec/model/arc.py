"""The arc refinement (spec/arc.md): vLLM's ARC victims, as pure functions.

ARC keeps its own state beside the core ``State``: the resident lists T1 and
T2, the ghost lists B1 and B2 and the target size of T1. The transitions
below say exactly how each operation changes it and which victims an
eviction must return; ``model.arc_profile.ARCRefinement`` plugs them into
``model.step`` (the ``Refinement`` protocol).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from policyspec.model.state import IDLE, IN_FLIGHT, State

__all__ = [
    "ArcState",
    "agrees_with",
    "arc_well_formed",
    "clear",
    "commit",
    "evict",
    "finish",
    "insert",
    "is_ready",
    "remove",
    "start",
    "store_miss",
    "touch",
    "victims",
]


@dataclass
class ArcState:
    """ARC's own state (spec/arc.md#state). Every list is least recent first.

    ``t1``: resident keys seen once (or whose block was not ready when
    touched); ``t2``: resident keys touched again while ready; ``b1``, ``b2``:
    ghosts, keys evicted from T1 and T2; ``target``: the size ARC aims at
    for T1, between 0 and ``capacity`` (a float once a ghost hit divides,
    as upstream); ``capacity``: the ``cache_capacity`` the policy was built
    with, which bounds the target and each ghost list.

    inv: arc_well_formed(self)
    """

    t1: list[int]
    t2: list[int]
    b1: list[int]
    b2: list[int]
    target: float | int
    capacity: int

    def copy(self) -> ArcState:
        """An equal state sharing no list with this one."""
        return ArcState(
            list(self.t1), list(self.t2), list(self.b1), list(self.b2), self.target, self.capacity
        )


def arc_well_formed(arc: ArcState) -> bool:
    """The ARC invariant: the four lists hold distinct keys and are pairwise
    disjoint, each ghost list holds at most ``capacity`` keys, and
    0 <= target <= capacity."""
    keys = [*arc.t1, *arc.t2, *arc.b1, *arc.b2]
    return (
        len(set(keys)) == len(keys)
        and len(arc.b1) <= arc.capacity
        and len(arc.b2) <= arc.capacity
        and 0 <= arc.target <= arc.capacity
    )


def agrees_with(arc: ArcState, state: State) -> bool:
    """T1 and T2 together hold exactly the present keys of the core state."""
    return sorted([*arc.t1, *arc.t2]) == sorted(state.refs)


def is_ready(state: State, key: int) -> bool:
    """The key's block is ready (ref_cnt >= 0): its store has completed."""
    return state.refs.get(key, IN_FLIGHT) >= IDLE


def _is_candidate(state: State, key: int, protected: Collection[int]) -> bool:
    """evict may take the key: its block is idle (ref_cnt 0) and the caller
    did not protect it. Eligibility follows ref_cnt, not mark_* calls."""
    return state.refs.get(key) == IDLE and key not in protected


def start(capacity: int) -> ArcState:
    """A freshly built ARC: four empty lists, target 0.

    pre: capacity >= 0
    post: arc_well_formed(__return__)
    """
    return ArcState([], [], [], [], 0, capacity)


def insert(arc: ArcState, key: int) -> ArcState:
    """ARC-INSERT-T1: the key becomes the most recent key of T1 and is no
    longer a ghost. The caller inserts only absent keys (can_insert).

    pre: key not in arc.t1 and key not in arc.t2
    post: __return__.t1 == arc.t1 + [key]
    post: key not in __return__.b1 and key not in __return__.b2
    post: __return__.t2 == arc.t2 and __return__.target == arc.target
    """
    return ArcState(
        [*arc.t1, key],
        list(arc.t2),
        [k for k in arc.b1 if k != key],
        [k for k in arc.b2 if k != key],
        arc.target,
        arc.capacity,
    )


def remove(arc: ArcState, key: int) -> ArcState:
    """ARC-REMOVE-NO-GHOST: the key leaves T1 or T2 and becomes no ghost;
    nothing else changes.

    post: key not in __return__.t1 and key not in __return__.t2
    post: __return__.b1 == arc.b1 and __return__.b2 == arc.b2
    post: __return__.target == arc.target
    """
    return ArcState(
        [k for k in arc.t1 if k != key],
        [k for k in arc.t2 if k != key],
        list(arc.b1),
        list(arc.b2),
        arc.target,
        arc.capacity,
    )


def _to_end(keys: list[int], key: int) -> None:
    keys.remove(key)
    keys.append(key)


def touch(arc: ArcState, state: State, keys: Sequence[int]) -> ArcState:
    """ARC-TOUCH-ORDER, ARC-TOUCH-NOT-READY, ARC-GHOST-ADAPT: walk ``keys``
    from last to first. A T1 key whose block is ready moves to the most
    recent end of T2; one whose block is not ready becomes T1's most recent.
    A T2 key becomes T2's most recent. A B1 key raises the target by
    max(1, |B2| / |B1|), at most to capacity; a B2 key lowers it by
    max(1, |B1| / |B2|), not below 0; either ghost becomes the most recent
    of its list. Other keys are ignored. ``state`` is the core state before
    the touch (it tells which blocks are ready).

    post: sorted(__return__.t1 + __return__.t2) == sorted(arc.t1 + arc.t2)
    post: sorted(__return__.b1) == sorted(arc.b1)
    post: sorted(__return__.b2) == sorted(arc.b2)
    """
    after = arc.copy()
    for key in reversed(list(keys)):
        if key in after.t1:
            after.t1.remove(key)
            if is_ready(state, key):
                after.t2.append(key)
            else:
                after.t1.append(key)
        elif key in after.t2:
            _to_end(after.t2, key)
        else:
            _adapt(after, key)
    return after


def _adapt(after: ArcState, key: int) -> bool:
    """A ghost hit on ``after`` (changed in place): B1 raises the target by
    max(1, |B2| / |B1|) up to the capacity, B2 lowers it by max(1, |B1| /
    |B2|) down to 0, and the ghost becomes its list's most recent. False
    when ``key`` is no ghost."""
    if key in after.b1:
        delta = max(1, len(after.b2) / len(after.b1))
        after.target = min(after.target + delta, after.capacity)
        _to_end(after.b1, key)
        return True
    if key in after.b2:
        delta = max(1, len(after.b1) / len(after.b2))
        after.target = max(after.target - delta, 0)
        _to_end(after.b2, key)
        return True
    return False


def store_miss(arc: ArcState, keys: Sequence[int]) -> ArcState:
    """ARC-STORE-MISS-ADAPT (vLLM 0.33): the manager reports the keys it is
    about to store before ``insert`` erases their ghosts; walking them from
    last to first, each ghost adapts the target as a touch of it would.
    Resident lists do not change (the keys are misses).

    post: __return__.t1 == arc.t1 and __return__.t2 == arc.t2
    post: sorted(__return__.b1) == sorted(arc.b1)
    post: sorted(__return__.b2) == sorted(arc.b2)
    """
    after = arc.copy()
    for key in reversed(list(keys)):
        _adapt(after, key)
    return after


def finish(
    arc: ArcState, keys: Sequence[int], insertion_only: Collection[int], reused: Collection[int]
) -> ArcState:
    """ARC-FINISH-REUSE (vLLM 0.33): a finished request's keys, head to
    tail (``request.ordered_keys``), walked from last to first: a key the
    request only inserted becomes the most recent of the list it is in
    (a store is no frequency hit); a key it reused moves from T1 to the most
    recent end of T2, or to that end within T2; any other key is left.

    post: sorted(__return__.t1 + __return__.t2) == sorted(arc.t1 + arc.t2)
    post: __return__.b1 == arc.b1 and __return__.b2 == arc.b2
    post: __return__.target == arc.target
    """
    after = arc.copy()
    for key in reversed(list(keys)):
        if key in insertion_only:
            if key in after.t1:
                _to_end(after.t1, key)
            elif key in after.t2:
                _to_end(after.t2, key)
        elif key in reused:
            if key in after.t1:
                after.t1.remove(key)
                after.t2.append(key)
            elif key in after.t2:
                _to_end(after.t2, key)
    return after


def victims(arc: ArcState, state: State, n: int, protected: Collection[int]) -> list[int] | None:
    """ARC-EVICT-ORDER, ARC-LIVENESS: the n keys ARC evicts, in order, or
    None when T1 and T2 together hold fewer than n candidates (idle,
    unprotected). Each next victim is the least recent candidate not yet
    chosen from the preferred list, else from the other list. T1 is
    preferred while the T1 count, less the victims already taken from T1,
    is at least int(target); otherwise T2 is. n == 0 gives [].

    pre: n >= 0
    post: __return__ is None or len(__return__) == n
    post: __return__ is None or all(_is_candidate(state, k, protected) for k in __return__)
    """
    pools = (
        [k for k in arc.t1 if _is_candidate(state, k, protected)],
        [k for k in arc.t2 if _is_candidate(state, k, protected)],
    )
    if len(pools[0]) + len(pools[1]) < n:
        return None
    chosen: list[int] = []
    t1_left = len(arc.t1)
    for _ in range(n):
        preferred = 0 if t1_left >= int(arc.target) else 1
        source = preferred if pools[preferred] else 1 - preferred
        chosen.append(pools[source].pop(0))
        if source == 0:
            t1_left -= 1
    return chosen


def commit(arc: ArcState, chosen: Sequence[int]) -> ArcState:
    """ARC-EVICT-GHOSTS: the victims leave T1 and T2; in victim order each
    becomes the most recent ghost of B1 (if it came from T1) or B2 (from
    T2); then each ghost list drops its least recent keys down to
    ``capacity``. The target does not change.

    pre: len(set(chosen)) == len(chosen)
    pre: all(k in arc.t1 or k in arc.t2 for k in chosen)
    post: not set(chosen) & set(__return__.t1 + __return__.t2)
    post: len(__return__.b1) <= arc.capacity and len(__return__.b2) <= arc.capacity
    post: __return__.target == arc.target
    """
    after = arc.copy()
    for key in chosen:
        if key in after.t1:
            after.t1.remove(key)
            after.b1.append(key)
        else:
            after.t2.remove(key)
            after.b2.append(key)
    after.b1 = after.b1[max(0, len(after.b1) - after.capacity) :]
    after.b2 = after.b2[max(0, len(after.b2) - after.capacity) :]
    return after


def evict(
    arc: ArcState, state: State, n: int, protected: Collection[int]
) -> tuple[ArcState, list[int] | None]:
    """ARC's whole eviction: the victims and the state after them. A None
    result leaves ARC's state exactly as it was (EVICT-ATOMIC).

    pre: n >= 0
    post: __return__[1] is not None or __return__[0] == arc
    """
    chosen = victims(arc, state, n, protected)
    if chosen is None:
        return arc.copy(), None
    return commit(arc, chosen), chosen


def clear(arc: ArcState) -> ArcState:
    """ARC-CLEAR-RESET: the state of a freshly built ARC of the same
    capacity.

    post: __return__ == start(arc.capacity)
    """
    return start(arc.capacity)
