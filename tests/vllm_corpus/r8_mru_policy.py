"""correct: most-recently-used eviction for R8 (PR #51787): touch takes an
optional ReqContext, store misses do not count as uses, and a finished
request applies its reuse once, in prefix order (order_request_keys).

MRU suits scans larger than the cache: the newest blocks go first.
"""

from collections import OrderedDict
from collections.abc import Iterable, Sequence

from vllm.v1.kv_offload.base import OffloadKey, ReqContext
from vllm.v1.kv_offload.cpu.policies.base import (
    CachePolicy,
    ChunkStatus,
    order_request_keys,
)


class MRUCachePolicy(CachePolicy):
    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.chunks: dict[OffloadKey, ChunkStatus] = {}
        self.recency: OrderedDict[OffloadKey, None] = OrderedDict()  # idle, oldest first

    def get(self, key: OffloadKey) -> ChunkStatus | None:
        return self.chunks.get(key)

    def insert(self, key: OffloadKey, chunk: ChunkStatus) -> None:
        self.chunks[key] = chunk
        if chunk.ref_cnt == 0:
            self.recency[key] = None

    def remove(self, key: OffloadKey) -> None:
        del self.chunks[key]
        self.recency.pop(key, None)

    def touch(self, keys: Iterable[OffloadKey], req_context: ReqContext | None) -> None:
        for key in reversed(list(keys)):
            if key in self.recency:
                self.recency.move_to_end(key)

    def on_store_miss(self, keys: Iterable[OffloadKey], req_context: ReqContext) -> None:
        return

    def on_request_finished(
        self,
        key_groups: Sequence[Sequence[OffloadKey]],
        insertion_only_keys: set[OffloadKey],
        reused_keys: set[OffloadKey],
        req_context: ReqContext,
    ) -> None:
        ordered = order_request_keys(key_groups, req_context)
        self.touch([k for k in ordered if k in reused_keys], req_context)

    def evict(
        self, n: int, protected: set[OffloadKey]
    ) -> list[tuple[OffloadKey, ChunkStatus]] | None:
        if n == 0:
            return []
        chosen = []
        for key in reversed(self.recency):
            if key not in protected:
                chosen.append(key)
                if len(chosen) == n:
                    break
        if len(chosen) < n:
            return None
        for key in chosen:
            del self.recency[key]
        return [(key, self.chunks.pop(key)) for key in chosen]

    def clear(self) -> None:
        self.chunks.clear()
        self.recency.clear()

    def mark_evictable(self, key: OffloadKey) -> None:
        self.recency.setdefault(key, None)

    def mark_non_evictable(self, key: OffloadKey) -> None:
        self.recency.pop(key, None)
