"""Public policies written against vLLM's in-tree ones: each derives from
the in-tree LRU or ARC, at vLLM's own module paths."""

from vllm.v1.kv_offload.cpu.policies.arc import ARCCachePolicy
from vllm.v1.kv_offload.cpu.policies.lru import LRUCachePolicy


class PlainLRU(LRUCachePolicy):
    """Changes nothing: it is vLLM's LRU under another name."""


class LoggedARC(ARCCachePolicy):
    """Counts evictions and otherwise defers to vLLM's ARC."""

    def __init__(self, cache_capacity: int):
        super().__init__(cache_capacity)
        self.evicted = 0

    def evict(self, n, protected):
        victims = super().evict(n, protected)
        if victims is not None:
            self.evicted += len(victims)
        return victims


class HeapPeekLRU(LRUCachePolicy):
    """Reads a private field of vLLM's LRU that the stand-in does not keep."""

    def evict(self, n, protected):
        if not self._heap:
            return [] if n == 0 else None
        return super().evict(n, protected)
