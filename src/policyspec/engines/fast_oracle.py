"""A fast, mutable oracle: the core model's state, changed in place.

The pure model copies its state on every step, which is right for a
specification and for CrossHair but costs the fast engine more than the
policy under test does. ``FastOracle`` holds the same state and changes it
in O(1) per key; tests/test_engine_fast.py holds it to the pure model. Its
idle order is the seed LRU's, exact for a refinement that keeps it.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable, Collection, Iterable, Sequence

from policyspec.model.actions import Primitive
from policyspec.model.state import IDLE, State
from policyspec.model.step import PREDICT, Step

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

    def to_state(self) -> State:
        """The equal pure-model state (for tests and diagnostics)."""
        return State(dict(self.refs), list(self.idle), self.capacity)

    # -- the model's interface, in place -----------------------------------------

    def step(self, call: Primitive, observed: object = PREDICT) -> Step[FastOracle]:
        """``ProfileModel.step`` of the core (or seed-LRU) model, changing
        this oracle; ``Step.model`` is the oracle itself. Only the outcome
        is judged here; which ids a call showed is the driver's count."""
        op = call[0]
        refs, idle = self.refs, self.idle
        if op == "get":
            return Step(self, call[1] in refs, True, None, ())
        if op == "evict":
            n, protected = call[1], call[2]
            expected = self.lru_victims(n, protected)
            victims = expected if observed is PREDICT else observed
            violation = None
            if observed is not PREDICT:
                violation = self.evict_violation(n, protected, victims)  # type: ignore[arg-type]
            if violation in (None, "EVICT-LIVENESS") and victims:
                self.commit(victims)  # type: ignore[arg-type]
            return Step(self, expected, False, violation, ())
        if op == "set_ref":
            refs[call[1]] = call[2]
        elif op == "insert":
            refs[call[1]] = call[2]
            if call[2] == IDLE:
                idle[call[1]] = None
        elif op == "remove":
            self.remove(call[1])
        elif op == "touch":
            self.touch(call[1])
        elif op == "mark_evictable":
            idle[call[1]] = None
        elif op == "mark_non_evictable":
            del idle[call[1]]
        elif op == "clear":
            self.clear()
        return Step(self, None, True, None, ())

    # -- what the driver calls ------------------------------------------------------

    def remove(self, key: int) -> None:
        del self.refs[key]
        self.idle.pop(key, None)

    def touch(self, keys: Sequence[int]) -> None:
        # Last key first, so the first ends up most recent; keys that are
        # not idle are skipped. A C-level pass: moving a key does not change
        # which keys are idle, so filtering as it goes is safe.
        idle = self.idle
        _consume(map(idle.move_to_end, filter(idle.__contains__, reversed(keys))))

    def clear(self) -> None:
        self.refs.clear()
        self.idle.clear()

    def commit(self, victims: Sequence[int]) -> None:
        """``evict.commit_evict`` in place: the victims are gone."""
        refs, idle = self.refs, self.idle
        for key in victims:
            del refs[key]
            del idle[key]

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
