"""faulty: API-NO-RAISE

A vLLM 0.33.0 (R9) LRU that ranks each stored chunk by the token position
the storing request recorded for its key, and assumes every key has one:
ReqContext.get_offload_key_position returns None for a key whose position
was never recorded, and negating None raises TypeError on the first such
insert. (vLLM's own 0.33.0 LRU falls back to a plain rank in that case.)
"""

from collections.abc import Iterable

from vllm.v1.kv_offload.base import OffloadKey, ReqContext
from vllm.v1.kv_offload.cpu.policies.base import CachePolicy, ChunkStatus


class PositionRankedLRUCachePolicy(CachePolicy):
    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.chunks: dict[OffloadKey, ChunkStatus] = {}
        self.rank: dict[OffloadKey, tuple[int, int]] = {}
        self.clock = 0

    def get(self, key: OffloadKey) -> ChunkStatus | None:
        return self.chunks.get(key)

    def insert(self, key: OffloadKey, chunk: ChunkStatus, req_context: ReqContext) -> None:
        position = req_context.get_offload_key_position(key)
        self.clock += 1
        self.rank[key] = (self.clock, -position)  # BUG: position may be None
        self.chunks[key] = chunk

    def remove(self, key: OffloadKey) -> None:
        del self.chunks[key]
        del self.rank[key]

    def touch(self, keys: Iterable[OffloadKey], req_context: ReqContext) -> None:
        for key in reversed(list(keys)):
            if key in self.rank:
                self.clock += 1
                self.rank[key] = (self.clock, 0)

    def evict(
        self, n: int, protected: set[OffloadKey]
    ) -> list[tuple[OffloadKey, ChunkStatus]] | None:
        idle = sorted(
            (k for k, c in self.chunks.items() if c.ref_cnt == 0 and k not in protected),
            key=self.rank.__getitem__,
        )
        if len(idle) < n:
            return None
        victims = [(k, self.chunks.pop(k)) for k in idle[:n]]
        for key, _ in victims:
            del self.rank[key]
        return victims

    def clear(self) -> None:
        self.chunks.clear()
        self.rank.clear()
