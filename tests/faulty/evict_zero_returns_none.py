"""faulty: EVICT-ZERO

Synthetic mutant (spec/sources.md I9: ``evict(0) == []``): a policy whose "nothing found"
test also catches the empty request, so ``evict(0, P)`` answers None, which
the caller reads as "refused" rather than "nothing needed".
"""

from collections.abc import Collection
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        victims = super().evict(n, protected)
        return victims or None  # the fault: [] becomes None
