"""correct: core=pass lru=fail arc=fail should=CLEAR-FRESH

Sampled LRU, the approximation Redis uses (``maxmemory-policy allkeys-lru``
with ``maxmemory-samples 5``): for each victim, draw ``SAMPLES`` eligible
keys at random and evict the least recently used of them. Exact LRU needs
an ordered structure updated on every access; sampling needs only a last-use
tick per key and a list to draw from (swap-remove keeps it O(1)).

The generator is seeded once, when the policy is built, and survives
``clear``: a reset forgets every key and tick, but the random stream goes
on where it stopped, as a process-wide generator would. So after a reset
the policy is not indistinguishable from a fresh one (the SHOULD
CLEAR-FRESH), although nothing it learnt about keys survives
(CLEAR-FORGETS-KEYS holds). The draws depend only on how many keys are
eligible, never on hash order, so the same calls give the same victims in
every process. ``evict`` counts before it draws: a refusal consumes no
randomness (EVICT-ATOMIC), and ``evict(0)`` draws nothing.
"""

import random
from collections.abc import Collection, Iterable
from typing import Any

SAMPLES = 5
SEED = 2024


class Policy:
    def __init__(self, cache_capacity: int) -> None:
        self.cache_capacity = cache_capacity
        self.rng = random.Random(SEED)
        self.blocks: dict[Any, Any] = {}
        self.last_use: dict[Any, int] = {}
        self.ticks = 0
        self.idle: list[Any] = []
        self.slot: dict[Any, int] = {}  # idle key -> its index in self.idle

    def _use(self, key: Any) -> None:
        self.ticks += 1
        self.last_use[key] = self.ticks

    def _add_idle(self, key: Any) -> None:
        if key not in self.slot:
            self.slot[key] = len(self.idle)
            self.idle.append(key)

    def _drop_idle(self, key: Any) -> None:
        index = self.slot.pop(key, None)
        if index is None:
            return
        last = self.idle.pop()
        if last != key:
            self.idle[index] = last
            self.slot[last] = index

    def get(self, key: Any) -> Any:
        return self.blocks.get(key)

    def insert(self, key: Any, block: Any) -> None:
        self.blocks[key] = block
        self._use(key)
        if block.ref_cnt == 0:
            self._add_idle(key)

    def remove(self, key: Any) -> None:
        del self.blocks[key]
        del self.last_use[key]
        self._drop_idle(key)

    def mark_evictable(self, key: Any) -> None:
        self._use(key)
        self._add_idle(key)

    def mark_non_evictable(self, key: Any) -> None:
        self._drop_idle(key)

    def touch(self, keys: Iterable[Any]) -> None:
        for key in reversed(list(keys)):
            if key in self.blocks:
                self._use(key)

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        pool = [k for k in self.idle if k not in protected]
        if len(pool) < n:
            return None
        victims: list[Any] = []
        for _ in range(n):
            drawn = self.rng.sample(range(len(pool)), min(SAMPLES, len(pool)))
            index = min(drawn, key=lambda i: self.last_use[pool[i]])
            victims.append(pool[index])
            pool[index] = pool[-1]
            pool.pop()
        for key in victims:
            self._drop_idle(key)
            del self.last_use[key]
        return [(key, self.blocks.pop(key)) for key in victims]

    def clear(self) -> None:
        # The generator is left alone on purpose: see the module docstring.
        self.blocks.clear()
        self.last_use.clear()
        self.idle.clear()
        self.slot.clear()
        self.ticks = 0
