"""faulty: INSERT-ADDS

Synthetic mutant in the spirit of spec/bugs.md V6 (a size bound taken from a
constant instead of the capacity) and G8 (unbounded growth fixed the wrong
way): the policy caps its own block map at 32 entries and drops the oldest
entry when an insert goes past it, whatever the manager's capacity. The
dropped neighbour's slot leaks and its data is lost.
"""

from typing import Any

from policyspec.reference.lru import LRUCachePolicy

LIMIT = 32


class Policy(LRUCachePolicy[Any, Any]):
    def insert(self, key: Any, block: Any) -> None:
        super().insert(key, block)
        if len(self.blocks) > LIMIT:
            oldest = next(iter(self.blocks))  # the fault: a bound of its own
            del self.blocks[oldest]
            self.evictable_blocks.pop(oldest, None)
