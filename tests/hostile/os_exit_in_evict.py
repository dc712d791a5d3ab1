"""hostile: API-PROCESS-ALIVE (isolate only). evict calls os._exit once two keys are idle."""

import os

from policyspec.reference import LRUCachePolicy


class Policy(LRUCachePolicy):  # type: ignore[type-arg]
    def evict(self, n, protected):  # type: ignore[no-untyped-def]
        if len(self.evictable_blocks) >= 2:
            os._exit(7)
        return super().evict(n, protected)
