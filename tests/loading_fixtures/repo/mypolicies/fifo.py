"""A FIFO policy that imports its package's helpers."""

from mypolicies.common import eligible

from . import common


class FIFOPolicy:
    def __init__(self, cache_capacity: int):
        self.cache_capacity = cache_capacity
        self.blocks: dict = {}
        assert common.eligible is eligible

    def get(self, key):
        return self.blocks.get(key)

    def insert(self, key, block):
        self.blocks[key] = block

    def remove(self, key):
        del self.blocks[key]

    def touch(self, keys):
        pass

    def evict(self, n, protected):
        if n == 0:
            return []
        chosen = eligible(self.blocks, protected)[:n]
        if len(chosen) < n:
            return None
        for key, _ in chosen:
            del self.blocks[key]
        return chosen
