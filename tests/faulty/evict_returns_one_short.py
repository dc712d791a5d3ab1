"""faulty: EVICT-EXACT-N

Synthetic mutant from spec/bugs.md ("evict returns n-1 pairs"; vLLM's
own test suite has a policy returning a partial list): the list stops one
pair short of n, leaving the store without the slots it asked for.
"""

from collections.abc import Collection
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        victims = super().evict(n, protected)
        if victims:
            kept = victims.pop()  # the fault: an off-by-one in the batch
            self.insert(*kept)
        return victims
