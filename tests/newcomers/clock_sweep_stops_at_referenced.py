"""A CLOCK (second chance) policy for vLLM 0.34 whose ``evict`` stops its
sweep at the first idle chunk with a reference bit: it refuses, atomic,
and the bit is never spent, so that chunk and every chunk behind it stay
out of reach, a fresh one too. ``on_request_access`` only set the bit, as
CLOCK's hooks do: evict is at fault. Expected: EVICT-LIVENESS, never
HOOK-KEEPS-MEMBERSHIP.
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
        victims = []
        for key in self.ring:
            if self.chunks[key].ref_cnt != 0 or key in protected:
                continue
            if key in self.referenced:
                return None  # the fault: the sweep stops here, the bit unspent
            victims.append(key)
            if len(victims) == n:
                break
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
