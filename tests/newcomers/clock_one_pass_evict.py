"""A CLOCK (second chance) policy for vLLM 0.34 whose ``evict`` looks at
the ring once: a chunk whose reference bit is set is passed over, never
taken on a second lap. A refused evict leaves everything as it was (it
is atomic), but once ``on_request_access`` has set the bit of every idle
chunk, evict refuses although chunks are eligible. The hook only set
bits, as CLOCK's hooks do: evict is at fault. Expected: EVICT-LIVENESS,
never HOOK-KEEPS-MEMBERSHIP.
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

    def get(self, key: OffloadKey) -> ChunkStatus | None:
        return self.chunks.get(key)

    def on_request_access(self, keys: Iterable[OffloadKey], req_context: ReqContext) -> None:
        self.referenced.update(k for k in keys if k in self.chunks)

    def insert(self, key: OffloadKey, chunk: ChunkStatus, req_context: ReqContext) -> None:
        self.chunks[key] = chunk
        self.ring.append(key)

    def remove(self, key: OffloadKey) -> None:
        self.ring.remove(key)
        del self.chunks[key]
        self.referenced.discard(key)

    def evict(
        self, n: int, protected: set[OffloadKey]
    ) -> list[tuple[OffloadKey, ChunkStatus]] | None:
        if n == 0:
            return []
        victims = [key for key in self.ring
                   if self.chunks[key].ref_cnt == 0 and key not in protected
                   and key not in self.referenced][:n]  # the fault: no second lap
        if len(victims) < n:
            return None
        passed = self.ring[:self.ring.index(victims[-1])]
        self.referenced.difference_update(passed)
        out = [(key, self.chunks[key]) for key in victims]
        for key in victims:
            self.remove(key)
        return out

    def clear(self) -> None:
        self.ring.clear()
        self.chunks.clear()
        self.referenced.clear()
