"""correct: LRU for the seed revision R3: clear(), and an idle list kept up
to date by mark_evictable / mark_non_evictable, so eviction never looks at
blocks in flight or being read.
"""

from collections import OrderedDict
from collections.abc import Iterable

from vllm.v1.kv_offload.base import OffloadKey
from vllm.v1.kv_offload.cpu.policies.base import BlockStatus, CachePolicy


class IdleListLRUCachePolicy(CachePolicy):
    def __init__(self, cache_capacity: int):
        self.cache_capacity = cache_capacity
        self.entries: dict[OffloadKey, BlockStatus] = {}
        self.idle: OrderedDict[OffloadKey, None] = OrderedDict()  # LRU first

    def get(self, key: OffloadKey) -> BlockStatus | None:
        return self.entries.get(key)

    def insert(self, key: OffloadKey, block: BlockStatus) -> None:
        self.entries[key] = block
        if block.ref_cnt == 0:
            self.idle[key] = None

    def remove(self, key: OffloadKey) -> None:
        del self.entries[key]
        self.idle.pop(key, None)

    def touch(self, keys: Iterable[OffloadKey]) -> None:
        for key in reversed(list(keys)):
            if key in self.idle:
                self.idle.move_to_end(key)

    def evict(
        self, n: int, protected: set[OffloadKey]
    ) -> list[tuple[OffloadKey, BlockStatus]] | None:
        if n == 0:
            return []
        picked = []
        for key in self.idle:
            if key not in protected:
                picked.append(key)
                if len(picked) == n:
                    break
        else:
            return None
        result = []
        for key in picked:
            del self.idle[key]
            result.append((key, self.entries.pop(key)))
        return result

    def clear(self) -> None:
        self.entries.clear()
        self.idle.clear()

    def mark_evictable(self, key: OffloadKey) -> None:
        if key not in self.idle:
            self.idle[key] = None

    def mark_non_evictable(self, key: OffloadKey) -> None:
        self.idle.pop(key, None)
