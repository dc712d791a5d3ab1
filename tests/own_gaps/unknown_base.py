"""A fork's policy deriving from an in-tree class upstream vLLM does not
have: the stand-ins cannot give what it inherits."""

from vllm.v1.kv_offload.cpu.policies.lru import SegmentedLRUCachePolicy


class TunedSLRU(SegmentedLRUCachePolicy):
    def evict(self, n, protected):
        return super().evict(n, protected)
