"""faulty: EVICT-PROTECTED-ABSENT-NEUTRAL engine=metamorphic

Synthetic mutant of the V13 family (``protected`` with caller-supplied keys): after a
successful eviction the policy remembers the absent keys of ``protected``
("they are being stored for a request, keep them") and skips them in every
later eviction, for good. How long a block lasts then depends on whether it
was once announced in a store, not on its use. Under core the skipping only
shows as other victims or a None that EVICT-LIVENESS discourages; the spec
says absent keys in ``protected`` must change no later result either.
"""

from collections.abc import Collection
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.reserved: set[Any] = set()

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        victims = super().evict(n, self.reserved.union(protected))
        if victims is not None:  # the fault: the reservation outlives the store
            self.reserved.update(k for k in protected if k not in self.blocks)
        return victims

    def remove(self, key: Any) -> None:
        super().remove(key)
        self.reserved.discard(key)

    def clear(self) -> None:
        super().clear()
        self.reserved.clear()
