"""faulty: EVICT-ATOMIC engine=metamorphic

Risk pattern 2 of spec/contract.md (state changes that survive a None
from ``evict``), the form the metamorphic relations target:
presence is untouched, but the scan rotates every unprotected idle key it
passes to the most recent end ("second chance") and keeps that order when
it runs short and returns None. Later evictions choose other victims than
they would have if the failed call had not happened.
"""

from collections.abc import Collection
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        seen = [k for k in self.evictable_blocks if k not in protected]
        if len(seen) < n:
            for key in seen:
                self.evictable_blocks.move_to_end(key)  # the fault: kept after None
            return None
        return super().evict(n, protected)
