"""faulty: MARK-KEEPS-MEMBERSHIP

Re-creates spec/bugs.md G7 (openucx/ucx PR #11363): the index held only idle
entries, but busy entries could be dropped from the cache, breaking "in the
cache exactly when in the index". Here ``mark_non_evictable`` takes the key
out of the block map as well as the idle list, so a block being read
answers MISS while a load still copies it.
"""

from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.busy: dict[Any, Any] = {}

    def mark_non_evictable(self, key: Any) -> None:
        super().mark_non_evictable(key)
        self.busy[key] = self.blocks.pop(key)  # the fault: out of the cache, not just the index

    def mark_evictable(self, key: Any) -> None:
        if key in self.busy:
            self.blocks[key] = self.busy.pop(key)
        super().mark_evictable(key)
