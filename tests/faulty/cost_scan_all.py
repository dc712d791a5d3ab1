"""faulty: COST-EVICT-PINNED

Third-party pattern (spec/contract.md, risk pattern 6): to find
the idle blocks, evict looks at every block the policy holds, pinned or not,
on every call. The answer is the seed LRU's, so every functional check
passes; a store on a cache full of blocks in flight pays for all of them.
"""

from collections.abc import Collection
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        # The fault: a pass over every block, whatever its state.
        idle = {key for key, block in self.blocks.items() if block.ref_cnt == 0}
        victims = []
        for key in self.evictable_blocks:
            if key in idle and key not in protected:
                victims.append(key)
                if len(victims) == n:
                    break
        if len(victims) < n:
            return None
        for key in victims:
            del self.evictable_blocks[key]
        return [(key, self.blocks.pop(key)) for key in victims]
