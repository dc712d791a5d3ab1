"""An R0 LRU that counts hits in the fork's PolicyStats (not upstream vLLM)."""

from collections import OrderedDict

from vllm.v1.kv_offload.cpu.policies.abstract import CachePolicy, PolicyStats


class StatsLRUPolicy(CachePolicy):
    def __init__(self, cache_capacity: int):
        self.cache_capacity = cache_capacity
        self.blocks: OrderedDict = OrderedDict()
        self.stats = PolicyStats()

    def get(self, key):
        return self.blocks.get(key)

    def insert(self, key, block):
        self.blocks[key] = block

    def remove(self, key):
        del self.blocks[key]

    def touch(self, keys):
        pass

    def evict(self, n, protected):
        return [] if n == 0 else None
