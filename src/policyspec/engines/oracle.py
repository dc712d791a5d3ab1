"""A fast, mutable oracle: the model's state and transitions, in place.

The pure model (``policyspec.model.operations``) copies its state on every
step, which is right for a specification and for CrossHair but costs the
fast engine more than the policy under test does. ``FastOracle`` holds the
same state (``refs``: ref_cnt per present key; ``idle``: idle keys, least
recent first) and changes it in place in O(1) per key, with ``idle`` an
OrderedDict. It must agree with the pure model on every legal sequence;
tests/test_engine_fast.py checks that with Hypothesis. The caller contract
is not re-checked here: the engine only sends legal actions.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable, Collection, Iterable, Sequence

from policyspec.model.state import IDLE, State

__all__ = ["FastOracle"]

_sink: deque[object] = deque(maxlen=0)
_consume: Callable[[Iterable[object]], None] = _sink.extend
"""Runs an iterator to its end in C."""


class FastOracle:
    """The model state of one policy, updated in place (spec/state.md)."""

    __slots__ = ("capacity", "idle", "refs")

    def __init__(self, capacity: int | None = None) -> None:
        self.capacity = capacity
        self.refs: dict[int, int] = {}
        self.idle: OrderedDict[int, None] = OrderedDict()

    @classmethod
    def of(cls, state: State) -> FastOracle:
        """An oracle holding ``state`` (which it does not share)."""
        oracle = cls(state.capacity)
        oracle.refs.update(state.refs)
        oracle.idle.update(dict.fromkeys(state.idle))
        return oracle

    def to_state(self) -> State:
        """The equal pure-model state (for tests and diagnostics)."""
        return State(dict(self.refs), list(self.idle), self.capacity)

    # -- the operations (operations.py), in place ------------------------------

    def get(self, key: int) -> bool:
        return key in self.refs

    def insert(self, key: int, ref_cnt: int) -> None:
        self.refs[key] = ref_cnt
        if ref_cnt == IDLE:
            self.idle[key] = None

    def remove(self, key: int) -> None:
        del self.refs[key]
        self.idle.pop(key, None)

    def touch(self, keys: Sequence[int]) -> None:
        # Last key first, so the first ends up most recent; keys that are
        # not idle are skipped. A C-level pass: moving a key does not change
        # which keys are idle, so filtering as it goes is safe.
        idle = self.idle
        _consume(map(idle.move_to_end, filter(idle.__contains__, reversed(keys))))

    def mark_evictable(self, key: int) -> None:
        self.idle[key] = None

    def mark_non_evictable(self, key: int) -> None:
        del self.idle[key]

    def set_ref(self, key: int, ref_cnt: int) -> None:
        """The manager's write of ref_cnt (not a policy call)."""
        self.refs[key] = ref_cnt

    def evict(self, n: int, protected: Collection[int]) -> list[int] | None:
        """The lru choice, committed: ``operations.evict`` in place."""
        victims = self.lru_victims(n, protected)
        if victims:
            self.commit(victims)
        return victims

    def clear(self) -> None:
        self.refs.clear()
        self.idle.clear()

    # -- what evict may return (evict.py) ------------------------------------

    def lru_victims(self, n: int, protected: Collection[int]) -> list[int] | None:
        """``evict.lru_victims``: the first n idle keys not in ``protected``,
        least recent first; None when fewer exist. Costs O(n + skipped)."""
        if n == 0:
            return []
        if n > len(self.idle):
            return None
        chosen: list[int] = []
        if protected:
            for key in self.idle:
                if key not in protected:
                    chosen.append(key)
                    if len(chosen) == n:
                        return chosen
            return None
        for key in self.idle:
            chosen.append(key)
            if len(chosen) == n:
                break
        return chosen

    def eligible_count(self, protected: Collection[int]) -> int:
        """``len(evict.eligible(state, protected))`` in O(len(protected))."""
        idle = self.idle
        return len(idle) - sum(1 for key in protected if key in idle)

    def evict_violation(
        self, n: int, protected: Collection[int], victims: Sequence[int] | None
    ) -> str | None:
        """``evict.evict_violation``: the first core requirement an outcome
        breaks, or None. Costs O(n + len(protected))."""
        if victims is None:
            if n == 0:
                return "EVICT-ZERO"
            return "EVICT-LIVENESS" if self.eligible_count(protected) >= n else None
        if n == 0 and len(victims) != 0:
            return "EVICT-ZERO"
        if len(victims) != n or len(set(victims)) != len(victims):
            return "EVICT-EXACT-N"
        refs, idle = self.refs, self.idle
        for key in victims:
            if key in protected:
                return "EVICT-UNPROTECTED"
            if refs.get(key) != IDLE or key not in idle:
                return "EVICT-IDLE-ONLY"
        return None

    def commit(self, victims: Sequence[int]) -> None:
        """``evict.commit_evict`` in place: the victims are gone."""
        refs, idle = self.refs, self.idle
        for key in victims:
            del refs[key]
            del idle[key]
