"""A CLOCK (second chance) policy for vLLM 0.34 whose failed ``evict``
is not atomic: when too few chunks can go, it returns None after the hand
has moved and the reference bits it passed were spent, so a later
eviction picks other victims than it would have. Expected: EVICT-ATOMIC.
"""

from collections.abc import Iterable

from vllm.v1.kv_offload.base import OffloadKey, ReqContext
from vllm.v1.kv_offload.cpu.policies.base import CachePolicy, ChunkStatus


class ClockCachePolicy(CachePolicy):
    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.ring: list[OffloadKey] = []
        self.chunks: dict[OffloadKey, ChunkStatus] = {}
        self.referenced: set[OffloadKey] = set()
        self.hand = 0

    def get(self, key: OffloadKey) -> ChunkStatus | None:
        return self.chunks.get(key)

    def on_request_access(self, keys: Iterable[OffloadKey], req_context: ReqContext) -> None:
        self.referenced.update(k for k in keys if k in self.chunks)

    def insert(self, key: OffloadKey, chunk: ChunkStatus, req_context: ReqContext) -> None:
        self.chunks[key] = chunk
        self.ring.append(key)

    def remove(self, key: OffloadKey) -> None:
        index = self.ring.index(key)
        self.ring.pop(index)
        if index < self.hand:
            self.hand -= 1
        del self.chunks[key]
        self.referenced.discard(key)

    def evict(
        self, n: int, protected: set[OffloadKey]
    ) -> list[tuple[OffloadKey, ChunkStatus]] | None:
        if n == 0:
            return []
        victims: list[OffloadKey] = []
        looked = 0
        while len(victims) < n and self.ring and looked < 2 * len(self.ring):
            self.hand %= len(self.ring)
            key = self.ring[self.hand]
            looked += 1
            if self.chunks[key].ref_cnt != 0 or key in protected or key in victims:
                self.hand += 1
                continue
            if key in self.referenced:
                self.referenced.discard(key)  # the chance is spent even if we fail
                self.hand += 1
                continue
            victims.append(key)
            self.hand += 1
        if len(victims) < n:
            return None  # the fault: the hand and the spent chances stay moved
        out = []
        for key in victims:
            out.append((key, self.chunks[key]))
            self.remove(key)
        return out

    def clear(self) -> None:
        self.ring.clear()
        self.chunks.clear()
        self.referenced.clear()
        self.hand = 0
