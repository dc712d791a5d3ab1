"""An R0 LRU that counts what it does in the fork's PolicyStats (not
upstream vLLM): built in __init__, counted in every method."""

from collections import OrderedDict

from vllm.v1.kv_offload.cpu.policies.abstract import CachePolicy, PolicyStats


class CountingLRUPolicy(CachePolicy):
    def __init__(self, cache_capacity: int):
        self.cache_capacity = cache_capacity
        self.blocks: OrderedDict = OrderedDict()
        self.stats = PolicyStats(cache_capacity)

    def get(self, key):
        block = self.blocks.get(key)
        if block is None:
            self.stats.misses += 1
        else:
            self.stats.record_hit(key)
        return block

    def insert(self, key, block):
        self.blocks[key] = block
        self.stats.inserts += 1

    def remove(self, key):
        del self.blocks[key]

    def touch(self, keys):
        for key in keys:
            if key in self.blocks:
                self.blocks.move_to_end(key)
                self.stats.touches += 1

    def evict(self, n, protected):
        victims = []
        for key, block in self.blocks.items():
            if len(victims) == n:
                break
            if block.ref_cnt == 0 and key not in protected:
                victims.append((key, block))
        if len(victims) < n:
            self.stats.failed_evictions += 1
            return None
        for key, _ in victims:
            del self.blocks[key]
        with self.stats.lock:
            self.stats.evictions += len(victims)
        return victims
