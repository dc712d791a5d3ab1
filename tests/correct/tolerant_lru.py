"""correct: core=pass lru=pass

Risk pattern 4 of spec/contract.md: ``remove`` and
``mark_non_evictable`` are tolerant (``pop(key, None)``) where the seed
raises KeyError. That hides caller bugs, but the spec promises nothing
outside the caller contract, and inside it the policy behaves exactly like
the seed, so it must pass both profiles: the suite must not call tolerance
a fault.
"""

from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def remove(self, key: Any) -> None:
        self.blocks.pop(key, None)
        self.evictable_blocks.pop(key, None)

    def mark_non_evictable(self, key: Any) -> None:
        self.evictable_blocks.pop(key, None)
