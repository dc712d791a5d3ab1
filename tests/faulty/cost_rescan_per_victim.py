"""faulty: COST-EVICT-LINEAR

vLLM's ARC before PR #50992 (spec/bugs.md V5), on an LRU: to stay atomic, evict
keeps its chosen victims in place until it has all n, and looks for each
next victim from the least recent end again, stepping over the ones already
chosen. Same answer as the seed LRU, quadratic work: 5,000 victims out of
10,000 blocks took about 700 ms instead of 5 ms.
"""

from collections.abc import Collection
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        chosen: dict[Any, None] = {}
        for _ in range(n):
            # The fault: every victim restarts the scan from the head.
            for key in self.evictable_blocks:
                if key not in protected and key not in chosen:
                    chosen[key] = None
                    break
            else:
                return None
        for key in chosen:
            del self.evictable_blocks[key]
        return [(key, self.blocks.pop(key)) for key in chosen]
