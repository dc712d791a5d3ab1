"""faulty: EVICT-ATOMIC engine=metamorphic

tests/correct/clock_value_scorer.py with a failed eviction that is not
atomic: when too few keys are eligible, ``evict`` "refreshes" the ones it
scanned (their age starts again now) before it returns None, so which keys
a later eviction takes depends on the refused call. The policy reads the
clock, and the fault shows only once time has passed between a key's store
and the refusal: the check's virtual clock and its clock steps
(policyspec.environment) make it a fault the metamorphic relation finds and
replays, where with a wall clock the relation was n/a for this policy.
"""

import heapq
import time
from collections.abc import Collection, Iterable
from typing import Any


class Policy:
    def __init__(self, cache_capacity: int) -> None:
        self.cache_capacity = cache_capacity
        self.blocks: dict[Any, Any] = {}
        self.idle: set[Any] = set()
        self.stamp: dict[Any, float] = {}
        self.uses: dict[Any, int] = {}
        self.arrival: dict[Any, int] = {}
        self.arrivals = 0

    def _value(self, key: Any, now: float) -> float:
        age = max(0.0, now - self.stamp[key])
        return (self.uses[key] + 1) / (age + 1.0)

    def get(self, key: Any) -> Any:
        return self.blocks.get(key)

    def insert(self, key: Any, block: Any) -> None:
        self.blocks[key] = block
        self.stamp[key] = time.time()
        self.uses[key] = 0
        self.arrival[key] = self.arrivals
        self.arrivals += 1
        if block.ref_cnt == 0:
            self.idle.add(key)

    def _forget(self, key: Any) -> None:
        del self.blocks[key], self.stamp[key], self.uses[key], self.arrival[key]
        self.idle.discard(key)

    def remove(self, key: Any) -> None:
        self._forget(key)

    def mark_evictable(self, key: Any) -> None:
        self.idle.add(key)

    def mark_non_evictable(self, key: Any) -> None:
        self.idle.discard(key)

    def touch(self, keys: Iterable[Any]) -> None:
        now = time.time()
        for key in keys:
            if key in self.blocks:
                self.uses[key] += 1
                self.stamp[key] = now

    def _choose(self, n: int, protected: Collection[Any]) -> list[Any] | None:
        eligible = [k for k in self.idle if k not in protected]
        if len(eligible) < n:
            return None
        now = time.time()
        return heapq.nsmallest(n, eligible, key=lambda k: (self._value(k, now), self.arrival[k]))

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        victims = self._choose(n, protected)
        if victims is None:
            now = time.time()
            for key in self.idle:
                if key not in protected:
                    self.stamp[key] = now  # the fault: a refusal changes the ages
            return None
        pairs = [(key, self.blocks[key]) for key in victims]
        for key in victims:
            self._forget(key)
        return pairs

    def clear(self) -> None:
        for table in (self.blocks, self.stamp, self.uses, self.arrival):
            table.clear()
        self.idle.clear()
