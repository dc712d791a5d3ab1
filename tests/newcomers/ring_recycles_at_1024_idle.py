"""A deterministic policy that bounds its bookkeeping: once 1,024 keys are
idle, ``mark_evictable`` drops the oldest idle entry to make room (its
chunk stays stored but can never be evicted again). Wrong only past 1,024
idle keys; expected: a FAIL (the idle key is lost from the eviction
order), never ERROR.
"""

from collections import OrderedDict

from vllm.v1.kv_offload.base import OffloadKey, ReqContext
from vllm.v1.kv_offload.cpu.policies.base import CachePolicy, ChunkStatus

IDLE_SLOTS = 1024


class RingCachePolicy(CachePolicy):
    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.chunks: dict[OffloadKey, ChunkStatus] = {}
        self.idle: OrderedDict[OffloadKey, None] = OrderedDict()

    def get(self, key: OffloadKey) -> ChunkStatus | None:
        return self.chunks.get(key)

    def insert(self, key: OffloadKey, chunk: ChunkStatus, req_context: ReqContext) -> None:
        self.chunks[key] = chunk
        if chunk.ref_cnt == 0:
            self.mark_evictable(key)

    def remove(self, key: OffloadKey) -> None:
        del self.chunks[key]
        self.idle.pop(key, None)

    def mark_evictable(self, key: OffloadKey) -> None:
        if len(self.idle) >= IDLE_SLOTS:
            self.idle.popitem(last=False)  # the fault: recycle the oldest slot
        self.idle[key] = None

    def mark_non_evictable(self, key: OffloadKey) -> None:
        self.idle.pop(key, None)

    def evict(
        self, n: int, protected: set[OffloadKey]
    ) -> list[tuple[OffloadKey, ChunkStatus]] | None:
        if n == 0:
            return []
        victims = [k for k in self.idle if k not in protected][:n]
        if len(victims) < n:
            return None
        out = []
        for key in victims:
            del self.idle[key]
            out.append((key, self.chunks.pop(key)))
        return out

    def clear(self) -> None:
        self.chunks.clear()
        self.idle.clear()
