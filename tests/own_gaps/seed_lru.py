"""A seed-API LRU (the revision with clear and mark_*: ``touch(keys)``, no
request context) written against vLLM's CachePolicy base, as policies of
that time were."""

from collections import OrderedDict

from vllm.v1.kv_offload.cpu.policies.base import CachePolicy


class SeedLRU(CachePolicy):
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
        if len(ready) < n:
            return None
        for key, _ in ready[:n]:
            del self.blocks[key]
        return ready[:n]

    def clear(self):
        self.blocks.clear()

    def mark_evictable(self, key):
        pass

    def mark_non_evictable(self, key):
        pass
