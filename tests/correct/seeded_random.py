"""correct: core=pass lru=fail

Random eviction with a generator seeded per instance
(``random.Random(seed)``), so the same calls on a fresh instance give the
same victims: deterministic, hence open to the metamorphic relations, and
correct under core. It samples from the eligible keys listed in the
policy's own idle order, never in a set's hash order, so the choice does not
depend on the process either. ``clear`` reseeds the generator, so after a
reset it behaves exactly like a fresh one (the SHOULD CLEAR-FRESH holds too);
tests/correct/random_survives_clear.py is the variant whose generator goes
on where it stopped.
"""

import random
from collections.abc import Collection
from typing import Any

from policyspec.reference.lru import LRUCachePolicy

SEED = 20240611


class Policy(LRUCachePolicy[Any, Any]):
    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.rng = random.Random(SEED)

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

    def clear(self) -> None:
        super().clear()
        self.rng = random.Random(SEED)
