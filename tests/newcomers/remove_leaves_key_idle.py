"""An LRU for vLLM 0.34 whose ``remove`` forgets the chunk but leaves its
key in the idle order, so a later ``evict`` can name a key that is gone.
Four calls show it: insert, remove, insert another, evict.
"""

from collections import OrderedDict

from vllm.v1.kv_offload.base import OffloadKey, ReqContext
from vllm.v1.kv_offload.cpu.policies.base import CachePolicy, ChunkStatus


class LeakyLRU(CachePolicy):
    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.chunks: dict[OffloadKey, ChunkStatus] = {}
        self.idle: OrderedDict[OffloadKey, None] = OrderedDict()

    def get(self, key: OffloadKey) -> ChunkStatus | None:
        return self.chunks.get(key)

    def insert(self, key: OffloadKey, chunk: ChunkStatus, req_context: ReqContext) -> None:
        self.chunks[key] = chunk
        if chunk.ref_cnt == 0:
            self.idle[key] = None

    def remove(self, key: OffloadKey) -> None:
        del self.chunks[key]  # the fault: the key stays in self.idle

    def mark_evictable(self, key: OffloadKey) -> None:
        self.idle[key] = None

    def mark_non_evictable(self, key: OffloadKey) -> None:
        self.idle.pop(key, None)

    def evict(
        self, n: int, protected: set[OffloadKey]
    ) -> list[tuple[OffloadKey, ChunkStatus | None]] | None:
        if n == 0:
            return []
        victims = [k for k in self.idle if k not in protected][:n]
        if len(victims) < n:
            return None
        out: list[tuple[OffloadKey, ChunkStatus | None]] = []
        for key in victims:
            del self.idle[key]
            out.append((key, self.chunks.pop(key, None)))
        return out

    def clear(self) -> None:
        self.chunks.clear()
        self.idle.clear()
