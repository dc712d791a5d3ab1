"""A two-list LRU for vLLM 0.34: chunks a finished request reused move to a
hot list. ``remove`` looks only in the cold list, so a hot chunk stays
present after it is removed. The hook is right (promotion is the design);
the fault is remove's: expected REMOVE-DROPS, never HOOK-KEEPS-MEMBERSHIP,
although the trace needs the hook to put the chunk in the hot list.
"""

from collections import OrderedDict
from collections.abc import Sequence

from vllm.v1.kv_offload.base import OffloadKey, ReqContext
from vllm.v1.kv_offload.cpu.policies.base import CachePolicy, ChunkStatus


class TwoListLRU(CachePolicy):
    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.cold: OrderedDict[OffloadKey, ChunkStatus] = OrderedDict()
        self.hot: OrderedDict[OffloadKey, ChunkStatus] = OrderedDict()

    def get(self, key: OffloadKey) -> ChunkStatus | None:
        return self.cold.get(key) or self.hot.get(key)

    def insert(self, key: OffloadKey, chunk: ChunkStatus, req_context: ReqContext) -> None:
        self.hot.pop(key, None)
        self.cold[key] = chunk

    def remove(self, key: OffloadKey) -> None:
        self.cold.pop(key, None)  # the fault: a hot chunk stays

    def on_request_finished(
        self,
        key_groups: Sequence[Sequence[OffloadKey]],
        insertion_only_keys: set[OffloadKey],
        reused_keys: set[OffloadKey],
        req_context: ReqContext,
    ) -> None:
        for key in reused_keys:
            if key in self.cold:
                self.hot[key] = self.cold.pop(key)

    def evict(
        self, n: int, protected: set[OffloadKey]
    ) -> list[tuple[OffloadKey, ChunkStatus]] | None:
        if n == 0:
            return []
        order = [*self.cold.items(), *self.hot.items()]
        victims = [k for k, c in order if c.ref_cnt == 0 and k not in protected][:n]
        if len(victims) < n:
            return None
        return [(k, self.cold.pop(k) if k in self.cold else self.hot.pop(k)) for k in victims]

    def clear(self) -> None:
        self.cold.clear()
        self.hot.clear()
