"""correct: a recency-list LRU written for vLLM 0.33.0 (R9): insert gets the
storing request's ReqContext, and on_request_access (upstream since 0.33.0)
reports a request's first accesses while it runs.

One OrderedDict holds every resident chunk, least recent first; evict scans
it from the front for idle, unprotected chunks. A store is a use, and so is
each first access of a resident key by a request; which request stored a
chunk is kept for debugging only, so eviction never depends on it.
"""

from collections import OrderedDict
from collections.abc import Iterable

from vllm.v1.kv_offload.base import OffloadKey, ReqContext
from vllm.v1.kv_offload.cpu.policies.base import CachePolicy, ChunkStatus


class RequestLRUCachePolicy(CachePolicy):
    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.order: OrderedDict[OffloadKey, ChunkStatus] = OrderedDict()
        self.stored_by: dict[OffloadKey, str] = {}

    def get(self, key: OffloadKey) -> ChunkStatus | None:
        return self.order.get(key)

    def insert(self, key: OffloadKey, chunk: ChunkStatus, req_context: ReqContext) -> None:
        self.order[key] = chunk  # only absent keys are inserted: it lands last
        self.stored_by[key] = req_context.req_id

    def remove(self, key: OffloadKey) -> None:
        del self.order[key]
        self.stored_by.pop(key, None)

    def _use(self, keys: Iterable[OffloadKey]) -> None:
        # the head of a prefix ends up most recent, so tails go first
        for key in reversed(list(keys)):
            if key in self.order:
                self.order.move_to_end(key)

    def touch(self, keys: Iterable[OffloadKey], req_context: ReqContext) -> None:
        self._use(keys)

    def on_request_access(self, keys: Iterable[OffloadKey], req_context: ReqContext) -> None:
        self._use(keys)

    def evict(
        self, n: int, protected: set[OffloadKey]
    ) -> list[tuple[OffloadKey, ChunkStatus]] | None:
        victims = []
        for key, chunk in self.order.items():
            if len(victims) == n:
                break
            if chunk.ref_cnt == 0 and key not in protected:
                victims.append((key, chunk))
        if len(victims) < n:
            return None
        for key, _ in victims:
            del self.order[key]
            self.stored_by.pop(key, None)
        return victims

    def clear(self) -> None:
        self.order.clear()
        self.stored_by.clear()
