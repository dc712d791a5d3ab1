"""correct: core=pass lru=fail

Evicts the most recent idle blocks first (an MRU policy, good for scans
larger than the cache). Every victim is idle, unprotected and distinct, and
it refuses only when fewer than n eligible keys exist, so it conforms to
core; its victims are the opposite of the seed's, so it fails lru.
"""

from collections.abc import Collection
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        victims: list[Any] = []
        for key in reversed(self.evictable_blocks):
            if key not in protected:
                victims.append(key)
                if len(victims) == n:
                    break
        if len(victims) < n:
            return None
        for key in victims:
            del self.evictable_blocks[key]
        return [(key, self.blocks.pop(key)) for key in victims]
