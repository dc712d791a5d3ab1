"""correct: LRU over chunks for R7: ChunkStatus records (chunk_id),
insert(key, chunk), and evict_until(can_fit, protected), which commits
exactly the prefix of candidates for which can_fit first holds; evict(n) is
evict_until(len >= n), as the in-tree LRU does.
"""

from collections import OrderedDict
from collections.abc import Callable, Iterable

from vllm.v1.kv_offload.base import OffloadKey, ReqContext
from vllm.v1.kv_offload.cpu.policies.base import CachePolicy, ChunkStatus


class ChunkLRUCachePolicy(CachePolicy):
    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.chunks: dict[OffloadKey, ChunkStatus] = {}
        self.evictable_chunks: OrderedDict[OffloadKey, None] = OrderedDict()

    def get(self, key: OffloadKey) -> ChunkStatus | None:
        return self.chunks.get(key)

    def insert(self, key: OffloadKey, chunk: ChunkStatus) -> None:
        self.chunks[key] = chunk
        if chunk.ref_cnt == 0:
            self.evictable_chunks[key] = None

    def remove(self, key: OffloadKey) -> None:
        del self.chunks[key]
        self.evictable_chunks.pop(key, None)

    def touch(self, keys: Iterable[OffloadKey], req_context: ReqContext) -> None:
        for key in reversed(list(keys)):
            if key in self.evictable_chunks:
                self.evictable_chunks.move_to_end(key)

    def evict_until(
        self,
        can_fit: Callable[[list[tuple[OffloadKey, ChunkStatus]]], bool],
        protected: set[OffloadKey],
    ) -> list[tuple[OffloadKey, ChunkStatus]] | None:
        candidates: list[tuple[OffloadKey, ChunkStatus]] = []
        for key in self.evictable_chunks:
            if key in protected:
                continue
            candidates.append((key, self.chunks[key]))
            if can_fit(list(candidates)):
                for victim, _ in candidates:
                    del self.evictable_chunks[victim]
                    del self.chunks[victim]
                return candidates
        return None

    def evict(
        self, n: int, protected: set[OffloadKey]
    ) -> list[tuple[OffloadKey, ChunkStatus]] | None:
        if n == 0:
            return []
        return self.evict_until(lambda found: len(found) >= n, protected)

    def clear(self) -> None:
        self.chunks.clear()
        self.evictable_chunks.clear()

    def mark_evictable(self, key: OffloadKey) -> None:
        if key not in self.evictable_chunks:
            self.evictable_chunks[key] = None

    def mark_non_evictable(self, key: OffloadKey) -> None:
        del self.evictable_chunks[key]
