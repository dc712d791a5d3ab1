"""An upstream-style policy (vLLM's own files run on Python 3.12+)."""

from typing import override

from vllm.v1.kv_offload.cpu.policies.base import CachePolicy


class OverridePolicy(CachePolicy):
    def __init__(self, cache_capacity: int):
        self.cache_capacity = cache_capacity
        self.blocks: dict = {}

    @override
    def get(self, key):
        return self.blocks.get(key)

    @override
    def insert(self, key, block):
        self.blocks[key] = block

    @override
    def remove(self, key):
        del self.blocks[key]

    @override
    def touch(self, keys):
        pass

    @override
    def evict(self, n, protected):
        if n == 0:
            return []
        chosen = [
            (k, b) for k, b in self.blocks.items() if b.ref_cnt == 0 and k not in protected
        ][:n]
        if len(chosen) < n:
            return None
        for key, _ in chosen:
            del self.blocks[key]
        return chosen
