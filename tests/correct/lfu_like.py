"""correct: core=pass lru=fail

Least frequently used: each store completion, end of a load and touch of an
idle key counts as a use; ``evict`` takes the idle keys with the fewest uses,
least recent first among equals. Counts are forgotten when a key leaves.
Correct under core (any n eligible keys may be chosen), not the seed's order.
"""

from collections.abc import Collection, Iterable
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.uses: dict[Any, int] = {}

    def insert(self, key: Any, block: Any) -> None:
        super().insert(key, block)
        self.uses[key] = 1 if block.ref_cnt == 0 else 0

    def remove(self, key: Any) -> None:
        super().remove(key)
        del self.uses[key]

    def touch(self, keys: Iterable[Any]) -> None:
        keys = list(keys)
        for key in keys:
            if key in self.evictable_blocks:
                self.uses[key] += 1
        super().touch(keys)

    def mark_evictable(self, key: Any) -> None:
        super().mark_evictable(key)
        self.uses[key] += 1

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        eligible = [k for k in self.evictable_blocks if k not in protected]
        if len(eligible) < n:
            return None
        rank = {k: i for i, k in enumerate(eligible)}
        victims = sorted(eligible, key=lambda k: (self.uses[k], rank[k]))[:n]
        for key in victims:
            del self.evictable_blocks[key]
            del self.uses[key]
        return [(key, self.blocks.pop(key)) for key in victims]

    def clear(self) -> None:
        super().clear()
        self.uses.clear()
