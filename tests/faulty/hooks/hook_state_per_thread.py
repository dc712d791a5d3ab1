"""faulty: API-ANY-THREAD profile=lru-0.33 engine=stateful

The request-ranked LRU keeping each request's rank in thread-local storage
(keyed by request id) instead of the request's context. vLLM 0.33.0 calls
a policy from two threads (serialized under the manager's lock): a batch of
a request that arrives on the other thread gets a second, newer rank, so
the request's chunks no longer share one rank and its tail is no longer
evicted before its head.
"""

import threading
from typing import Any

from policyspec.reference.lru033 import LRU033CachePolicy


class Policy(LRU033CachePolicy[Any, Any]):
    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.local = threading.local()

    def request_rank(self, req_context: Any) -> int:
        ranks = getattr(self.local, "ranks", None)
        if ranks is None:
            ranks = self.local.ranks = {}  # the fault: one table per thread
        key = (req_context.req_id, self.generation)
        if key not in ranks:
            ranks[key] = self._tick()
        rank: int = ranks[key]
        return rank
