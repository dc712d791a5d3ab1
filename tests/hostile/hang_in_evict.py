"""hostile: API-RETURNS. evict loops forever once more than two keys are idle."""

from policyspec.reference import LRUCachePolicy


class Policy(LRUCachePolicy):  # type: ignore[type-arg]
    def evict(self, n, protected):  # type: ignore[no-untyped-def]
        if len(self.evictable_blocks) > 2:
            while True:
                pass
        return super().evict(n, protected)
