"""A fork's LRU that asks a fork-only vLLM helper which victims to prefer,
only inside evict: the file imports and builds on the stand-ins, and the
name is first used once the check runs."""

from collections import OrderedDict

from vllm.v1.kv_offload.cpu.policies.base import CachePolicy
from vllm.v1.kv_offload.cpu.policies.victims import rank_victims


class ForkEvictLRU(CachePolicy):
    def __init__(self, cache_capacity: int):
        self.cache_capacity = cache_capacity
        self.blocks: OrderedDict = OrderedDict()

    def get(self, key):
        return self.blocks.get(key)

    def insert(self, key, block):
        self.blocks[key] = block

    def remove(self, key):
        del self.blocks[key]

    def touch(self, keys):
        for key in reversed(list(keys)):
            if key in self.blocks:
                self.blocks.move_to_end(key)

    def evict(self, n, protected):
        ready = [(k, b) for k, b in self.blocks.items() if b.ref_cnt == 0 and k not in protected]
        ready = rank_victims(ready)
        if len(ready) < n:
            return None
        for key, _ in ready[:n]:
            del self.blocks[key]
        return ready[:n]
