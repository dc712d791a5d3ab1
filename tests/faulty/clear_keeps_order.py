"""faulty: CLEAR-FORGETS-KEYS engine=metamorphic

Synthetic mutant "clear forgets something" (spec/sources.md I13; spec/bugs.md V12 and the
catalogue's "clear forgets to reset the target"): ``clear`` empties the
block map but not the order structure, and ``evict`` skips entries whose
block is gone or not idle, so nothing crashes and no stale key is ever
returned. A key stored again after the reset keeps the place it had before
it, so the policy chooses other victims than a fresh instance would, and
than it would after the same history with other keys: what it learnt about
keys outlived the reset (CLEAR-FORGETS-KEYS; the SHOULD CLEAR-FRESH is
broken too).
"""

from collections.abc import Collection
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def clear(self) -> None:
        self.blocks.clear()  # the fault: the order survives the reset

    def insert(self, key: Any, block: Any) -> None:
        self.blocks[key] = block
        if block.ref_cnt == 0:
            self.evictable_blocks[key] = None  # keeps an old place if it has one

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        victims: list[Any] = []
        for key in self.evictable_blocks:
            block = self.blocks.get(key)
            if block is None or block.ref_cnt != 0 or key in protected:
                continue
            victims.append(key)
            if len(victims) == n:
                break
        if len(victims) < n:
            return None
        for key in victims:
            del self.evictable_blocks[key]
        return [(key, self.blocks.pop(key)) for key in victims]

    def mark_non_evictable(self, key: Any) -> None:
        self.evictable_blocks.pop(key, None)

    def remove(self, key: Any) -> None:
        del self.blocks[key]
        self.evictable_blocks.pop(key, None)
