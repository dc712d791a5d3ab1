"""faulty: TOUCH-TOTAL

An R4 two-queue (recent / frequent, ARC-like) policy whose touch pops a
block from the recent queue and then, when the block is not ready yet, calls
move_to_end on the key it just popped: KeyError on every touch of a block
whose store is in flight (the bug vLLM PR #34576 fixed in ARC).
"""

from collections import OrderedDict
from collections.abc import Iterable

from vllm.v1.kv_offload.base import OffloadKey, ReqContext
from vllm.v1.kv_offload.cpu.policies.base import BlockStatus, CachePolicy


class TwoQueueCachePolicy(CachePolicy):
    def __init__(self, cache_capacity: int):
        super().__init__(cache_capacity)
        self.recent: OrderedDict[OffloadKey, BlockStatus] = OrderedDict()
        self.frequent: OrderedDict[OffloadKey, BlockStatus] = OrderedDict()

    def get(self, key: OffloadKey) -> BlockStatus | None:
        block = self.recent.get(key)
        return block if block is not None else self.frequent.get(key)

    def insert(self, key: OffloadKey, block: BlockStatus) -> None:
        self.recent[key] = block

    def remove(self, key: OffloadKey) -> None:
        if self.recent.pop(key, None) is None:
            del self.frequent[key]

    def touch(self, keys: Iterable[OffloadKey], req_context: ReqContext) -> None:
        for key in reversed(list(keys)):
            if key in self.recent:
                block = self.recent.pop(key)
                if not block.is_ready:
                    self.recent.move_to_end(key)  # BUG: key was just popped
                else:
                    self.frequent[key] = block
            elif key in self.frequent:
                self.frequent.move_to_end(key)

    def evict(
        self, n: int, protected: set[OffloadKey]
    ) -> list[tuple[OffloadKey, BlockStatus]] | None:
        if n == 0:
            return []
        found = []
        for queue in (self.recent, self.frequent):
            for key, block in queue.items():
                if block.ref_cnt == 0 and key not in protected and len(found) < n:
                    found.append((queue, key, block))
        if len(found) < n:
            return None
        for queue, key, _ in found:
            del queue[key]
        return [(key, block) for _, key, block in found]

    def clear(self) -> None:
        self.recent.clear()
        self.frequent.clear()
