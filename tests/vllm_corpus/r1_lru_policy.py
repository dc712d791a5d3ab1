"""correct: LRU for R1 (CachePolicy in vllm/v1/kv_offload/cpu/policies/base.py,
no clear, no mark_*): eligibility is read from ref_cnt at eviction time.
"""

from collections import OrderedDict
from collections.abc import Iterable

from vllm.v1.kv_offload.base import OffloadKey
from vllm.v1.kv_offload.cpu.policies.base import BlockStatus, CachePolicy


class SimpleLRUCachePolicy(CachePolicy):
    def __init__(self, cache_capacity: int):
        self.cache_capacity = cache_capacity
        self.lru: OrderedDict[OffloadKey, BlockStatus] = OrderedDict()

    def get(self, key: OffloadKey) -> BlockStatus | None:
        return self.lru.get(key)

    def insert(self, key: OffloadKey, block: BlockStatus) -> None:
        self.lru[key] = block

    def remove(self, key: OffloadKey) -> None:
        del self.lru[key]

    def touch(self, keys: Iterable[OffloadKey]) -> None:
        # the first key is the head of the prefix: it ends most recent
        for key in reversed(list(keys)):
            if key in self.lru:
                self.lru.move_to_end(key)

    def evict(
        self, n: int, protected: set[OffloadKey]
    ) -> list[tuple[OffloadKey, BlockStatus]] | None:
        if n == 0:
            return []
        found = [
            (key, block)
            for key, block in self.lru.items()
            if block.ref_cnt == 0 and key not in protected
        ][:n]
        if len(found) < n:
            return None
        for key, _ in found:
            self.lru.pop(key)
        return found
