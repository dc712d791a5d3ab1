"""faulty: EVICT-UNPROTECTED

An R3 LRU whose evict forgets the protected set (the bug vLLM PR #35846
fixed in the manager: a block already stored could be evicted to make room
for the rest of the same store, silently losing it).
"""

from collections import OrderedDict
from collections.abc import Iterable

from vllm.v1.kv_offload.base import OffloadKey
from vllm.v1.kv_offload.cpu.policies.base import BlockStatus, CachePolicy


class CarelessLRUCachePolicy(CachePolicy):
    def __init__(self, cache_capacity: int):
        self.blocks: dict[OffloadKey, BlockStatus] = {}
        self.evictable: OrderedDict[OffloadKey, None] = OrderedDict()

    def get(self, key: OffloadKey) -> BlockStatus | None:
        return self.blocks.get(key)

    def insert(self, key: OffloadKey, block: BlockStatus) -> None:
        self.blocks[key] = block
        if block.ref_cnt == 0:
            self.evictable[key] = None

    def remove(self, key: OffloadKey) -> None:
        del self.blocks[key]
        self.evictable.pop(key, None)

    def touch(self, keys: Iterable[OffloadKey]) -> None:
        for key in reversed(list(keys)):
            if key in self.evictable:
                self.evictable.move_to_end(key)

    def evict(
        self, n: int, protected: set[OffloadKey]
    ) -> list[tuple[OffloadKey, BlockStatus]] | None:
        if n == 0:
            return []
        if len(self.evictable) < n:
            return None
        keys = list(self.evictable)[:n]  # BUG: protected keys are not skipped
        for key in keys:
            del self.evictable[key]
        return [(key, self.blocks.pop(key)) for key in keys]

    def clear(self) -> None:
        self.blocks.clear()
        self.evictable.clear()

    def mark_evictable(self, key: OffloadKey) -> None:
        if key not in self.evictable:
            self.evictable[key] = None

    def mark_non_evictable(self, key: OffloadKey) -> None:
        del self.evictable[key]
