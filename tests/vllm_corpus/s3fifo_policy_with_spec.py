"""correct: an S3-FIFO-like policy (small FIFO, main FIFO with second chances,
ghost FIFO) for R4, in a file that, like a public S3-FIFO policy, also
defines an offloading spec deriving from vLLM's CPUOffloadingSpec and
registers itself in the manager module. Without vLLM those two names are
inert placeholders; the policy itself never uses them.
"""

from collections import OrderedDict
from collections.abc import Iterable

from vllm.v1.kv_offload.base import OffloadKey, ReqContext
from vllm.v1.kv_offload.cpu import manager as cpu_manager
from vllm.v1.kv_offload.cpu.policies.base import BlockStatus, CachePolicy
from vllm.v1.kv_offload.cpu.spec import CPUOffloadingSpec

MAX_FREQ = 3


class S3FIFOCachePolicy(CachePolicy):
    def __init__(self, cache_capacity: int):
        super().__init__(cache_capacity)
        self.clear()

    def clear(self) -> None:
        self.blocks: dict[OffloadKey, BlockStatus] = {}
        self.small: OrderedDict[OffloadKey, None] = OrderedDict()
        self.main: OrderedDict[OffloadKey, None] = OrderedDict()
        self.ghost: OrderedDict[OffloadKey, None] = OrderedDict()
        self.freq: dict[OffloadKey, int] = {}

    def get(self, key: OffloadKey) -> BlockStatus | None:
        return self.blocks.get(key)

    def insert(self, key: OffloadKey, block: BlockStatus) -> None:
        self.blocks[key] = block
        self.freq[key] = 0
        if key in self.ghost:  # seen recently: straight to the main queue
            del self.ghost[key]
            self.main[key] = None
        else:
            self.small[key] = None

    def remove(self, key: OffloadKey) -> None:
        del self.blocks[key]
        del self.freq[key]
        if key in self.small:
            del self.small[key]
        else:
            self.main.pop(key, None)

    def touch(self, keys: Iterable[OffloadKey], req_context: ReqContext) -> None:
        for key in keys:
            block = self.blocks.get(key)
            if block is not None and block.is_ready:
                self.freq[key] = min(self.freq[key] + 1, MAX_FREQ)

    def _eligible(self, key: OffloadKey, protected: set[OffloadKey]) -> bool:
        return self.blocks[key].ref_cnt == 0 and key not in protected

    def _first(self, queue: OrderedDict, protected: set[OffloadKey]) -> OffloadKey | None:
        for key in queue:
            if self._eligible(key, protected):
                return key
        return None

    def evict(
        self, n: int, protected: set[OffloadKey]
    ) -> list[tuple[OffloadKey, BlockStatus]] | None:
        if n == 0:
            return []
        if sum(1 for key in self.blocks if self._eligible(key, protected)) < n:
            return None  # nothing changed
        victims: list[tuple[OffloadKey, BlockStatus]] = []
        while len(victims) < n:
            key = self._first(self.small, protected)
            if key is not None:
                del self.small[key]
                if self.freq[key] > 0:
                    self.freq[key] = 0
                    self.main[key] = None
                    continue
            else:
                key = self._first(self.main, protected)
                assert key is not None
                if self.freq[key] > 0:
                    self.freq[key] -= 1
                    self.main.move_to_end(key)
                    continue
                del self.main[key]
            del self.freq[key]
            victims.append((key, self.blocks.pop(key)))
            self.ghost[key] = None
            while len(self.ghost) > self.cache_capacity:
                self.ghost.popitem(last=False)
        return victims


class S3FIFOOffloadingSpec(CPUOffloadingSpec):
    """Selects the S3-FIFO policy through the offloading config."""

    policy_name = "s3fifo"


cpu_manager._CACHE_POLICIES["s3fifo"] = S3FIFOCachePolicy
