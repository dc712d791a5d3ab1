"""hostile: EVICT-IDENTITY. evict returns copies of the blocks, not the blocks."""

import copy

from policyspec.reference import LRUCachePolicy


class Policy(LRUCachePolicy):  # type: ignore[type-arg]
    def evict(self, n, protected):  # type: ignore[no-untyped-def]
        result = super().evict(n, protected)
        return None if result is None else [(k, copy.copy(b)) for k, b in result]
