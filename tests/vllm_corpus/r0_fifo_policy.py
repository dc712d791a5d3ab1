"""correct: first in, first out, written for R0 (CachePolicy in
vllm/v1/kv_offload/cpu/policies/abstract.py, OffloadKey from
vllm.v1.kv_offload.abstract).

Recency is ignored: touch accepts anything and changes nothing. Eviction
takes the oldest idle, unprotected blocks.
"""

from collections.abc import Iterable

from vllm.v1.kv_offload.abstract import OffloadKey
from vllm.v1.kv_offload.cpu.policies.abstract import BlockStatus, CachePolicy


class FIFOCachePolicy(CachePolicy):
    def __init__(self, cache_capacity: int):
        self.cache_capacity = cache_capacity
        # dicts keep insertion order: the first key is the oldest
        self.blocks: dict[OffloadKey, BlockStatus] = {}

    def get(self, key: OffloadKey) -> BlockStatus | None:
        return self.blocks.get(key)

    def insert(self, key: OffloadKey, block: BlockStatus) -> None:
        self.blocks[key] = block

    def remove(self, key: OffloadKey) -> None:
        self.blocks.pop(key)

    def touch(self, keys: Iterable[OffloadKey]) -> None:
        return

    def evict(
        self, n: int, protected: set[OffloadKey]
    ) -> list[tuple[OffloadKey, BlockStatus]] | None:
        if n == 0:
            return []
        victims = []
        for key, block in self.blocks.items():
            if key in protected or block.ref_cnt != 0:
                continue
            victims.append((key, block))
            if len(victims) == n:
                for victim, _ in victims:
                    del self.blocks[victim]
                return victims
        return None
