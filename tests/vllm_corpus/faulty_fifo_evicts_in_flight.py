"""faulty: EVICT-IDLE-ONLY

An R1 FIFO that treats blocks whose store is still in flight (ref_cnt -1)
as "expendable" and evicts them (the speculative-eviction pattern of
spec/bugs.md V9): the manager then hands the slot out again while the worker is
still writing it.
"""

from collections.abc import Iterable

from vllm.v1.kv_offload.base import OffloadKey
from vllm.v1.kv_offload.cpu.policies.base import BlockStatus, CachePolicy


class SpeculativeFIFOCachePolicy(CachePolicy):
    def __init__(self, cache_capacity: int):
        self.blocks: dict[OffloadKey, BlockStatus] = {}

    def get(self, key: OffloadKey) -> BlockStatus | None:
        return self.blocks.get(key)

    def insert(self, key: OffloadKey, block: BlockStatus) -> None:
        self.blocks[key] = block

    def remove(self, key: OffloadKey) -> None:
        del self.blocks[key]

    def touch(self, keys: Iterable[OffloadKey]) -> None:
        return

    def evict(
        self, n: int, protected: set[OffloadKey]
    ) -> list[tuple[OffloadKey, BlockStatus]] | None:
        if n == 0:
            return []
        victims = [
            (key, block)
            for key, block in self.blocks.items()
            if block.ref_cnt <= 0 and key not in protected  # BUG: -1 is in flight
        ][:n]
        if len(victims) < n:
            return None
        for key, _ in victims:
            del self.blocks[key]
        return victims
