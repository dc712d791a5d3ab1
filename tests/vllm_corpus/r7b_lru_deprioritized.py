"""correct: LRU over chunks for R7b, where evict(n, protected, deprioritized)
takes plain idle chunks first and deprioritized ones only when nothing else
is left.
"""

from collections import OrderedDict
from collections.abc import Iterable

from vllm.v1.kv_offload.base import OffloadKey, ReqContext
from vllm.v1.kv_offload.cpu.policies.base import CachePolicy, ChunkStatus


class DeprioritizingLRUCachePolicy(CachePolicy):
    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.chunks: dict[OffloadKey, ChunkStatus] = {}
        self.idle: OrderedDict[OffloadKey, None] = OrderedDict()

    def get(self, key: OffloadKey) -> ChunkStatus | None:
        return self.chunks.get(key)

    def insert(self, key: OffloadKey, chunk: ChunkStatus) -> None:
        self.chunks[key] = chunk
        if chunk.ref_cnt == 0:
            self.idle[key] = None

    def remove(self, key: OffloadKey) -> None:
        del self.chunks[key]
        self.idle.pop(key, None)

    def touch(self, keys: Iterable[OffloadKey], req_context: ReqContext) -> None:
        for key in reversed(list(keys)):
            if key in self.idle:
                self.idle.move_to_end(key)

    def evict(
        self, n: int, protected: set[OffloadKey], deprioritized: set[OffloadKey]
    ) -> list[tuple[OffloadKey, ChunkStatus]] | None:
        if n == 0:
            return []
        allowed = [key for key in self.idle if key not in protected]
        ordered = [k for k in allowed if k not in deprioritized] + [
            k for k in allowed if k in deprioritized
        ]
        if len(ordered) < n:
            return None
        result = []
        for key in ordered[:n]:
            del self.idle[key]
            result.append((key, self.chunks.pop(key)))
        return result

    def clear(self) -> None:
        self.chunks.clear()
        self.idle.clear()

    def mark_evictable(self, key: OffloadKey) -> None:
        self.idle.setdefault(key, None)

    def mark_non_evictable(self, key: OffloadKey) -> None:
        self.idle.pop(key)
