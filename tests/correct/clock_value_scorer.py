"""correct: core=pass lru=fail

A value-scoring residency policy that reads the clock, the shape of the
public "value per age" designs: a key's value is (uses + 1) / (age + 1),
its age in seconds since it was stored or last touched by the wall clock
(``time.time()``), its uses the touches it got. ``evict`` takes the
eligible keys of lowest value, oldest insertion first among equals; it
chooses before it removes, so a refusal changes nothing, and it reads the
clock only to choose. Ages never go below 0, so a wall clock that steps
back only reorders the values.

Correct under core: before the clock was virtual its checks marked EVICT-ATOMIC,
EVICT-ZERO and CLEAR-FORGETS-KEYS n/a ("the policy is not deterministic"),
since two runs of the same calls read two different clocks. Now the clock
is virtual (policyspec.environment), the relations judge it, and the
engines step its clock (forward, and back). Not the seed LRU's order.
tests/faulty/clock_failed_evict_restamps.py is the non-atomic variant.
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
            return None
        pairs = [(key, self.blocks[key]) for key in victims]
        for key in victims:
            self._forget(key)
        return pairs

    def clear(self) -> None:
        for table in (self.blocks, self.stamp, self.uses, self.arrival):
            table.clear()
        self.idle.clear()
