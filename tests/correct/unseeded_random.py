"""correct: core=pass

Random eviction from an unseeded generator: two fresh instances given the
same calls choose different victims. Every choice is still a correct one,
so the policy must pass core; the metamorphic relations must find it
non-deterministic and call themselves not applicable rather than report a
false failure (issue 3, item 3). Not run under lru: a non-deterministic
policy fails lru in a different way each time.
"""

import random
from collections.abc import Collection
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.rng = random.Random()

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        eligible = [k for k in self.evictable_blocks if k not in protected]
        if len(eligible) < n:
            return None
        victims = self.rng.sample(eligible, n)
        for key in victims:
            del self.evictable_blocks[key]
        return [(key, self.blocks.pop(key)) for key in victims]
