"""hostile: EVICT-SHAPE. evict returns a generator of pairs."""

from policyspec.reference import LRUCachePolicy


class Policy(LRUCachePolicy):  # type: ignore[type-arg]
    def evict(self, n, protected):  # type: ignore[no-untyped-def]
        result = super().evict(n, protected)
        return None if result is None else (pair for pair in result)
