"""correct: core=pass lru=fail

Risk pattern 7 of spec/contract.md (Python ``hash()`` of keys): evicts
the eligible keys with the smallest ``hash(key)``. For bytes keys that
order changes from one process to the next (hash randomisation), but within
one process it is fixed, so the policy is deterministic per run and correct
under core. It is not the seed's order.
"""

from collections.abc import Collection
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        eligible = [k for k in self.evictable_blocks if k not in protected]
        if len(eligible) < n:
            return None
        victims = sorted(eligible, key=hash)[:n]
        for key in victims:
            del self.evictable_blocks[key]
        return [(key, self.blocks.pop(key)) for key in victims]
