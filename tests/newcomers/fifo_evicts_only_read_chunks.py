"""A FIFO for vLLM 0.34 (no mark calls) whose evict takes only chunks
being read by one request (``ref_cnt != 1`` where ``!= 0`` was meant): a
completed store never becomes evictable. Expected under ``fifo``:
FIFO-LIVENESS, never a mark requirement (the policy has no mark to blame).
"""

from collections import OrderedDict
from collections.abc import Iterable, Sequence

from vllm.v1.kv_offload.base import OffloadKey, ReqContext
from vllm.v1.kv_offload.cpu.policies.base import CachePolicy, ChunkStatus


class FIFOCachePolicy(CachePolicy):
    def __init__(self, cache_capacity: int):
        super().__init__(cache_capacity)
        # oldest insert first; dict order is the whole policy
        self.queue: OrderedDict[OffloadKey, ChunkStatus] = OrderedDict()

    def get(self, key: OffloadKey) -> ChunkStatus | None:
        return self.queue.get(key)

    def insert(self, key: OffloadKey, chunk: ChunkStatus, req_context: ReqContext) -> None:
        self.queue[key] = chunk

    def remove(self, key: OffloadKey) -> None:
        del self.queue[key]

    def on_request_access(self, keys: Iterable[OffloadKey], req_context: ReqContext) -> None:
        # a FIFO does not care how often a chunk is read
        return

    def on_request_finished(
        self,
        key_groups: Sequence[Sequence[OffloadKey]],
        insertion_only_keys: set[OffloadKey],
        reused_keys: set[OffloadKey],
        req_context: ReqContext,
    ) -> None:
        return

    def evict(
        self, n: int, protected: set[OffloadKey]
    ) -> list[tuple[OffloadKey, ChunkStatus]] | None:
        if n <= 0:
            return []
        victims: list[OffloadKey] = []
        for key, chunk in self.queue.items():
            if chunk.ref_cnt != 1 or key in protected:
                continue
            victims.append(key)
            if len(victims) == n:
                break
        if len(victims) < n:
            # not enough room: leave everything as it was
            return None
        return [(key, self.queue.pop(key)) for key in victims]

    def clear(self) -> None:
        self.queue.clear()
