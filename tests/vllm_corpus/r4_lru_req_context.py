"""correct: LRU for R4, where touch receives the request's ReqContext
(PR #47744). It remembers which request last touched each cached block, as
a request-aware policy would, and logs through vLLM's logger.
"""

from collections import OrderedDict
from collections.abc import Iterable

from vllm.logger import init_logger
from vllm.v1.kv_offload.base import OffloadKey, ReqContext
from vllm.v1.kv_offload.cpu.policies.base import BlockStatus, CachePolicy

logger = init_logger(__name__)


class RequestAwareLRUCachePolicy(CachePolicy):
    def __init__(self, cache_capacity: int):
        super().__init__(cache_capacity)
        self.blocks: dict[OffloadKey, BlockStatus] = {}
        self.evictable: OrderedDict[OffloadKey, None] = OrderedDict()
        self.last_request: dict[OffloadKey, str] = {}

    def get(self, key: OffloadKey) -> BlockStatus | None:
        return self.blocks.get(key)

    def insert(self, key: OffloadKey, block: BlockStatus) -> None:
        self.blocks[key] = block
        if block.ref_cnt == 0:
            self.evictable[key] = None

    def remove(self, key: OffloadKey) -> None:
        del self.blocks[key]
        self.evictable.pop(key, None)
        self.last_request.pop(key, None)

    def touch(self, keys: Iterable[OffloadKey], req_context: ReqContext) -> None:
        keys = list(keys)
        logger.debug("request %s touches %d keys", req_context.req_id, len(keys))
        for key in reversed(keys):
            if key in self.blocks:
                self.last_request[key] = req_context.req_id
            if key in self.evictable:
                self.evictable.move_to_end(key)

    def evict(
        self, n: int, protected: set[OffloadKey]
    ) -> list[tuple[OffloadKey, BlockStatus]] | None:
        if n == 0:
            return []
        victims = []
        for key in self.evictable:
            if key in protected:
                continue
            victims.append((key, self.blocks[key]))
            if len(victims) == n:
                break
        if len(victims) < n:
            return None
        for key, _ in victims:
            del self.evictable[key]
            del self.blocks[key]
            self.last_request.pop(key, None)
        return victims

    def clear(self) -> None:
        self.blocks.clear()
        self.evictable.clear()
        self.last_request.clear()

    def mark_evictable(self, key: OffloadKey) -> None:
        self.evictable.setdefault(key, None)

    def mark_non_evictable(self, key: OffloadKey) -> None:
        del self.evictable[key]
