"""correct: an LRU keyed by BlockHash, for the first CachePolicy (R-1), which
lived in vllm/v1/kv_offload/cpu_manager.py.

One ordered map from least to most recently used; eviction walks it and
takes idle (ref_cnt 0), unprotected blocks.
"""

from collections import OrderedDict
from collections.abc import Iterable

from vllm.v1.core.kv_cache_utils import BlockHash
from vllm.v1.kv_offload.cpu_manager import BlockStatus, CachePolicy


class BlockHashLRUPolicy(CachePolicy):
    def __init__(self, cache_capacity: int):
        self.cache_capacity = cache_capacity
        self.order: OrderedDict[BlockHash, BlockStatus] = OrderedDict()

    def get(self, block_hash: BlockHash) -> BlockStatus | None:
        return self.order.get(block_hash)

    def insert(self, block_hash: BlockHash, block: BlockStatus) -> None:
        self.order[block_hash] = block

    def remove(self, block_hash: BlockHash) -> None:
        del self.order[block_hash]

    def touch(self, block_hashes: Iterable[BlockHash]) -> None:
        for block_hash in reversed(list(block_hashes)):
            if block_hash in self.order:
                self.order.move_to_end(block_hash)

    def evict(
        self, n: int, protected: set[BlockHash]
    ) -> list[tuple[BlockHash, BlockStatus]] | None:
        chosen: list[tuple[BlockHash, BlockStatus]] = []
        if n == 0:
            return chosen
        for block_hash, block in self.order.items():
            if block.ref_cnt == 0 and block_hash not in protected:
                chosen.append((block_hash, block))
                if len(chosen) == n:
                    break
        if len(chosen) < n:
            return None
        for block_hash, _ in chosen:
            del self.order[block_hash]
        return chosen
