"""A seed-API LRU that bounds its idle order: once 1,024 keys are idle,
``mark_evictable`` recycles the oldest idle entry to make room (its block
stays stored and idle, but ``evict`` never offers it again). Wrong only
past 1,024 idle keys; expected under ``lru``: a FAIL, never ERROR.
"""

from collections import OrderedDict
from collections.abc import Collection, Iterable
from typing import Any

IDLE_SLOTS = 1024


class RingLRU:
    def __init__(self, cache_capacity: int) -> None:
        self.cache_capacity = cache_capacity
        self.blocks: dict[Any, Any] = {}
        self.idle: OrderedDict[Any, None] = OrderedDict()

    def get(self, key: Any) -> Any:
        return self.blocks.get(key)

    def insert(self, key: Any, block: Any) -> None:
        self.blocks[key] = block
        if block.ref_cnt == 0:
            self.idle[key] = None

    def remove(self, key: Any) -> None:
        del self.blocks[key]
        self.idle.pop(key, None)

    def touch(self, keys: Iterable[Any]) -> None:
        for key in reversed(list(keys)):
            if key in self.idle:
                self.idle.move_to_end(key)

    def mark_evictable(self, key: Any) -> None:
        if key not in self.idle and len(self.idle) >= IDLE_SLOTS:
            self.idle.popitem(last=False)  # the fault: recycle the oldest slot
        self.idle[key] = None

    def mark_non_evictable(self, key: Any) -> None:
        del self.idle[key]

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        victims = [k for k in self.idle if k not in protected][:n]
        if len(victims) < n:
            return None
        for key in victims:
            del self.idle[key]
        return [(key, self.blocks.pop(key)) for key in victims]

    def clear(self) -> None:
        self.blocks.clear()
        self.idle.clear()
