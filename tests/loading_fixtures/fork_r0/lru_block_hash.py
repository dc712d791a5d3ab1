"""An R0 LRU of a fork that kept R-1's parameter names (block_hash)."""

from collections import OrderedDict

from vllm.v1.kv_offload.cpu.policies.abstract import BlockStatus, CachePolicy


class LRUPolicy(CachePolicy):
    def __init__(self, cache_capacity: int):
        self.cache_capacity = cache_capacity
        self.blocks: OrderedDict[object, BlockStatus] = OrderedDict()

    def get(self, block_hash):
        return self.blocks.get(block_hash)

    def insert(self, block_hash, block):
        self.blocks[block_hash] = block

    def remove(self, block_hash):
        del self.blocks[block_hash]

    def touch(self, block_hashes):
        for block_hash in reversed(list(block_hashes)):
            if block_hash in self.blocks:
                self.blocks.move_to_end(block_hash)

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
