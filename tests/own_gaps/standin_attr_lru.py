"""LRUs that reach, inside a call, attributes of vLLM's classes that the
stand-ins do not have: a base-class hook through super(), a class constant
of CachePolicy, and a function of the stand-in module that upstream vLLM does not have."""

from collections import OrderedDict

from vllm.v1.kv_offload.cpu.policies import base
from vllm.v1.kv_offload.cpu.policies.base import CachePolicy


class _LRU(CachePolicy):
    def __init__(self, cache_capacity: int):
        self.cache_capacity = cache_capacity
        self.blocks: OrderedDict = OrderedDict()

    def get(self, key):
        return self.blocks.get(key)

    def insert(self, key, block):
        self.blocks[key] = block

    def remove(self, key):
        del self.blocks[key]

    def clear(self):
        self.blocks.clear()

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


class SuperHookLRU(_LRU):
    def evict(self, n, protected):
        chosen = super().evict(n, protected)
        for key, _ in chosen or ():
            super().on_evicted(key)
        return chosen


class ClassConstantLRU(_LRU):
    def evict(self, n, protected):
        if n > CachePolicy.MAX_EVICT_BATCH:
            return None
        return super().evict(n, protected)


class ModuleNameLRU(_LRU):
    def remove(self, key):
        base.forget_block(key)
        del self.blocks[key]
