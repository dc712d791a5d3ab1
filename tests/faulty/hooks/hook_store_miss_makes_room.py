"""faulty: HOOK-KEEPS-MEMBERSHIP engine=stateful

A request-ranked LRU whose ``on_store_miss`` makes room for the missing
keys itself: when the cache is full it drops its least recent idle chunk
there and then. The manager never learns of it (it frees no chunk, counts
the chunk as cached and idle, reports no eviction): a hook must not change
which keys are present.
"""

from collections.abc import Iterable
from typing import Any

from policyspec.reference.lru033 import LRU033CachePolicy


class Policy(LRU033CachePolicy[Any, Any]):
    def on_store_miss(self, keys: Iterable[Any], req_context: Any) -> None:
        for _ in list(keys):
            if len(self.chunks) >= self.cache_capacity and self.idle:
                _, victim = self.idle[0]
                self.mark_non_evictable(victim)  # the fault: dropped outside evict
                del self.chunks[victim]
                del self.ranks[victim]
