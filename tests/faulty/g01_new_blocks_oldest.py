"""faulty: LRU-INSERT-RECENCY profile=lru

Re-creates spec/bugs.md G1 (Mooncake issues #2976, #3097): newly stored data was
indexed with timestamp 0, so the newest data was evicted first. Here a
block inserted idle is placed at the least recent end instead of the most
recent one.
"""

from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def insert(self, key: Any, block: Any) -> None:
        super().insert(key, block)
        if block.ref_cnt == 0:
            self.evictable_blocks.move_to_end(key, last=False)  # the fault: "timestamp 0"
