"""correct: a FIFO with second chances written for vLLM 0.34.0 (R10): no
touch; a chunk a finished request reused gets one second chance.

Chunks queue in insertion order (``queue``, oldest first). At a request's
finish every chunk it reused is marked referenced; evict walks the queue
from the front, takes idle unprotected chunks that are not referenced, and
clears (and requeues at the back) the referenced ones it passes, as CLOCK
does. A failed eviction undoes its requeues, so it changes nothing.
"""

from collections import OrderedDict
from collections.abc import Sequence

from vllm.v1.kv_offload.base import OffloadKey, ReqContext
from vllm.v1.kv_offload.cpu.policies.base import CachePolicy, ChunkStatus


class SecondChanceFIFOCachePolicy(CachePolicy):
    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.queue: OrderedDict[OffloadKey, ChunkStatus] = OrderedDict()
        self.referenced: set[OffloadKey] = set()

    def get(self, key: OffloadKey) -> ChunkStatus | None:
        return self.queue.get(key)

    def insert(self, key: OffloadKey, chunk: ChunkStatus, req_context: ReqContext) -> None:
        self.queue[key] = chunk

    def remove(self, key: OffloadKey) -> None:
        del self.queue[key]
        self.referenced.discard(key)

    def on_request_finished(
        self,
        key_groups: Sequence[Sequence[OffloadKey]],
        insertion_only_keys: set[OffloadKey],
        reused_keys: set[OffloadKey],
        req_context: ReqContext,
    ) -> None:
        self.referenced.update(k for k in reused_keys if k in self.queue)

    def evict(
        self, n: int, protected: set[OffloadKey]
    ) -> list[tuple[OffloadKey, ChunkStatus]] | None:
        if n == 0:
            return []
        order = list(self.queue)
        cleared: list[OffloadKey] = []
        victims: list[OffloadKey] = []
        for key in order + order:  # a second pass sees the chances just spent
            if len(victims) == n:
                break
            chunk = self.queue[key]
            if key in victims or chunk.ref_cnt != 0 or key in protected:
                continue
            if key in self.referenced and key not in cleared:
                cleared.append(key)
                continue
            victims.append(key)
        if len(victims) < n:
            return None
        for key in cleared:
            self.referenced.discard(key)
            self.queue.move_to_end(key)
        out = [(key, self.queue.pop(key)) for key in victims]
        self.referenced.difference_update(victims)
        return out

    def clear(self) -> None:
        self.queue.clear()
        self.referenced.clear()
