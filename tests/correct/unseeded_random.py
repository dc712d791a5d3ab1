"""correct: core=pass should=CLEAR-FRESH

Random eviction from an unseeded generator (``random.Random()``): in
production two fresh instances given the same calls choose different
victims. Every choice is still a correct one, so the policy must pass core.
Under a check a generator made without a seed during a policy call gets
one from the policy instance (policyspec.environment), so
every replay draws the same numbers and the metamorphic relations judge it
like a seeded policy (before, they called themselves not applicable).
Its generator goes on after ``clear`` (the SHOULD CLEAR-FRESH,
as tests/correct/random_survives_clear.py). Not run under lru: it is no LRU.
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
