"""An R0 LRU of a fork that kept R-1's parameter names (bh)."""

from collections import OrderedDict

from vllm.v1.kv_offload.cpu.policies.abstract import BlockStatus, CachePolicy


class LRUPolicy(CachePolicy):
    def __init__(self, cache_capacity: int):
        self.cache_capacity = cache_capacity
        self.blocks: OrderedDict[object, BlockStatus] = OrderedDict()

    def get(self, bh):
        return self.blocks.get(bh)

    def insert(self, bh, block):
        self.blocks[bh] = block

    def remove(self, bh):
        del self.blocks[bh]

    def touch(self, bhs):
        for bh in reversed(list(bhs)):
            if bh in self.blocks:
                self.blocks.move_to_end(bh)

    def evict(self, n, protected):
        if n == 0:
            return []
        chosen = [
            (k, b) for k, b in self.blocks.items() if b.ref_cnt == 0 and k not in protected
        ][:n]
        if len(chosen) < n:
            return None
        for k, _ in chosen:
            del self.blocks[k]
        return chosen
