"""faulty: TOUCH-TOTAL also=API-NO-RAISE,MANAGER-IDLE-COUNT,MANAGER-NO-LOST-DATA

A structure that wraps at a fixed size: the idle order lives in a ring
buffer of ``SLOTS`` slots, least recent first, next to a set of the idle
keys. Like an array ring it keeps one slot free to tell full from empty,
so it holds ``SLOTS - 1`` keys (``collections.deque(maxlen=SLOTS - 1)``
here), and appending to a full ring silently overwrites its oldest
slot, so the least recent idle key falls out of the order while it stays
idle: ``evict`` never offers it again, and
a later ``touch`` or ``mark_non_evictable`` of it fails to find it in the
ring and raises ValueError (TOUCH-TOTAL, or API-NO-RAISE when a load
starts on it). Under the lru profile the very next ``evict`` returns the
wrong victim.

Size: 4,096 idle keys at once (so a cache of 4,096 blocks or more);
4,095 idle keys fit and are handled correctly.

engine: size (the engine that draws sizes; the others stay at 64 blocks)
"""

from collections import deque
from collections.abc import Collection, Iterable
from typing import Any

from policyspec.reference.lru import LRUCachePolicy

SLOTS = 4096


class Policy(LRUCachePolicy[Any, Any]):
    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.idle: set[Any] = set()
        self.ring: deque[Any] = deque(maxlen=SLOTS - 1)  # the fault: a full ring overwrites

    def _append(self, key: Any) -> None:
        self.idle.add(key)
        self.ring.append(key)

    def _drop(self, key: Any) -> None:
        self.idle.remove(key)
        self.ring.remove(key)

    def insert(self, key: Any, block: Any) -> None:
        self.blocks[key] = block
        if block.ref_cnt == 0:
            self._append(key)

    def remove(self, key: Any) -> None:
        del self.blocks[key]
        if key in self.idle:
            self._drop(key)

    def touch(self, keys: Iterable[Any]) -> None:
        for key in reversed(list(keys)):
            if key in self.idle:
                self._drop(key)
                self._append(key)

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        victims: list[Any] = []
        for key in self.ring:
            if key not in protected:
                victims.append(key)
                if len(victims) == n:
                    break
        if len(victims) < n:
            return None
        for key in victims:
            self._drop(key)
        return [(key, self.blocks.pop(key)) for key in victims]

    def clear(self) -> None:
        self.blocks.clear()
        self.idle.clear()
        self.ring.clear()

    def mark_evictable(self, key: Any) -> None:
        if key not in self.idle:
            self._append(key)

    def mark_non_evictable(self, key: Any) -> None:
        self._drop(key)
