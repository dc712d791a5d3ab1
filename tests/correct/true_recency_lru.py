"""correct: core=pass lru=fail

The "true LRU" the reviewers of spec/bugs.md V8 asked for (vllm PR #51787, PR
#46216): a load is a use when it starts, and when the last load ends the
block returns to the idle list at the place that use gives it, instead of
becoming the most recent key when the transfer ends. spec/lru.md says such a
policy conforms to core but not to lru, whose LRU-MARK-RECENCY fixes the
seed's behaviour.
"""

from collections.abc import Collection, Iterable
from itertools import count
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.clock = count()
        self.last_use: dict[Any, int] = {}  # idle keys are kept in this order
        self.reading: set[Any] = set()

    def insert(self, key: Any, block: Any) -> None:
        super().insert(key, block)
        self.last_use[key] = next(self.clock)

    def touch(self, keys: Iterable[Any]) -> None:
        keys = list(keys)
        super().touch(keys)
        for key in reversed(keys):
            if key in self.evictable_blocks:
                self.last_use[key] = next(self.clock)

    def mark_non_evictable(self, key: Any) -> None:
        super().mark_non_evictable(key)
        self.reading.add(key)
        self.last_use[key] = next(self.clock)  # the load starts: that is the use

    def mark_evictable(self, key: Any) -> None:
        if key not in self.reading:  # a store completes: now is its use
            self.last_use[key] = next(self.clock)
            super().mark_evictable(key)
            return
        self.reading.discard(key)
        stamp = self.last_use[key]
        keys = list(self.evictable_blocks)
        at = next((i for i, k in enumerate(keys) if self.last_use[k] > stamp), len(keys))
        keys.insert(at, key)
        self.evictable_blocks.clear()
        self.evictable_blocks.update(dict.fromkeys(keys))

    def remove(self, key: Any) -> None:
        super().remove(key)
        self.last_use.pop(key, None)
        self.reading.discard(key)

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        victims = super().evict(n, protected)
        for key, _ in victims or ():
            del self.last_use[key]
        return victims

    def clear(self) -> None:
        super().clear()
        self.last_use.clear()
        self.reading.clear()
