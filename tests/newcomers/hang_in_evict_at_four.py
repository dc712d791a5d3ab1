"""An LRU for vLLM 0.34 whose ``evict`` loops forever once four keys are
resident. Expected under ``--isolate`` with a call time limit: API-RETURNS
alone (the child killed at the limit is a consequence, not another fault).
"""

from collections import OrderedDict

from vllm.v1.kv_offload.base import OffloadKey, ReqContext
from vllm.v1.kv_offload.cpu.policies.base import CachePolicy, ChunkStatus


class HangingLRU(CachePolicy):
    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.chunks: OrderedDict[OffloadKey, ChunkStatus] = OrderedDict()

    def get(self, key: OffloadKey) -> ChunkStatus | None:
        return self.chunks.get(key)

    def insert(self, key: OffloadKey, chunk: ChunkStatus, req_context: ReqContext) -> None:
        self.chunks[key] = chunk

    def remove(self, key: OffloadKey) -> None:
        del self.chunks[key]

    def evict(
        self, n: int, protected: set[OffloadKey]
    ) -> list[tuple[OffloadKey, ChunkStatus]] | None:
        if n == 0:
            return []
        while len(self.chunks) >= 4:
            pass  # the fault
        victims = [k for k, c in self.chunks.items() if c.ref_cnt == 0 and k not in protected]
        if len(victims) < n:
            return None
        return [(k, self.chunks.pop(k)) for k in victims[:n]]

    def clear(self) -> None:
        self.chunks.clear()
