"""correct: core=pass lru=fail

First in, first out: idle blocks are evicted in the order they were
inserted, whatever was touched, loaded or completed since. ``touch`` is a
no-op (ignoring order is allowed by core, risk pattern 9 of
spec/contract.md). Correct under core, not the seed's order.
"""

from collections.abc import Collection, Iterable
from typing import Any


class Policy:
    def __init__(self, cache_capacity: int) -> None:
        self.cache_capacity = cache_capacity
        self.blocks: dict[Any, Any] = {}  # insertion order is the eviction order
        self.idle: set[Any] = set()

    def get(self, key: Any) -> Any:
        return self.blocks.get(key)

    def insert(self, key: Any, block: Any) -> None:
        self.blocks[key] = block
        if block.ref_cnt == 0:
            self.idle.add(key)

    def remove(self, key: Any) -> None:
        del self.blocks[key]
        self.idle.discard(key)

    def touch(self, keys: Iterable[Any]) -> None:
        pass

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        victims: list[Any] = []
        for key in self.blocks:
            if key in self.idle and key not in protected:
                victims.append(key)
                if len(victims) == n:
                    break
        if len(victims) < n:
            return None
        for key in victims:
            self.idle.discard(key)
        return [(key, self.blocks.pop(key)) for key in victims]

    def clear(self) -> None:
        self.blocks.clear()
        self.idle.clear()

    def mark_evictable(self, key: Any) -> None:
        self.idle.add(key)

    def mark_non_evictable(self, key: Any) -> None:
        self.idle.remove(key)
