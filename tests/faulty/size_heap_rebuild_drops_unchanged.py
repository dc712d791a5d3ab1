"""faulty: LRU-TOUCH-ORDER profile=lru also=LRU-EVICT-ORDER,LRU-LIVENESS,MANAGER-IDLE-COUNT

A faulty heap rebuild, after vLLM 0.33's LRU: idle keys sit in a lazy
min-heap of (stamp, key) entries; a touch gives every idle key it names a
new stamp and pushes a new entry, leaving the old one behind as stale
(skipped by ``evict``), and the heap is compacted once it holds twice as
many entries as there are idle keys. When one touch changes at least
max(64, idle keys / 4) keys, pushing an entry per key costs more than one
linear ``heapify``, so the heap is rebuilt instead. The rebuild here takes
the keys the touch changed, where it must take every idle key: the idle
keys the touch did not name drop out of the heap and are never chosen
again while they stay idle (until a compaction happens to bring them back).
The wrong order shows at the next ``evict``; the lru profile's attribution
names the touch that caused it.

Size: a touch that names at least 64 idle keys, and at least a quarter of
all idle keys, while some idle key is not named; 63 named idle keys take
the per-key path and are correct.

engine: size (the engine that draws sizes; the others stay at 64 blocks)
"""

from collections.abc import Collection, Iterable
from heapq import heapify, heappop, heappush
from typing import Any

from policyspec.reference.lru import LRUCachePolicy

REBUILD_AT = 64


class Policy(LRUCachePolicy[Any, Any]):
    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.stamps: dict[Any, int] = {}  # idle key -> its current stamp
        self.heap: list[tuple[int, Any]] = []
        self.clock = 0

    def _restamp(self, key: Any) -> None:
        self.clock += 1
        self.stamps[key] = self.clock

    def _enter(self, key: Any) -> None:
        heappush(self.heap, (self.stamps[key], key))

    def _maybe_compact(self) -> None:
        if len(self.heap) >= max(REBUILD_AT, 2 * len(self.stamps)):
            # One entry per idle key, the stale ones gone.
            self.heap = [(stamp, key) for key, stamp in self.stamps.items()]
            heapify(self.heap)

    def insert(self, key: Any, block: Any) -> None:
        self.blocks[key] = block
        if block.ref_cnt == 0:
            self._restamp(key)
            self._enter(key)
            self._maybe_compact()

    def remove(self, key: Any) -> None:
        del self.blocks[key]
        self.stamps.pop(key, None)

    def touch(self, keys: Iterable[Any]) -> None:
        # Last key first, so the head of the prefix gets the newest stamp.
        changed = [key for key in reversed(list(keys)) if key in self.stamps]
        for key in changed:
            self._restamp(key)
        distinct = dict.fromkeys(changed)
        if len(distinct) >= max(REBUILD_AT, len(self.stamps) // 4):
            self.heap = [(self.stamps[key], key) for key in distinct]  # the fault: only these
            heapify(self.heap)
            return
        for key in distinct:
            self._enter(key)
        self._maybe_compact()

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        popped: list[tuple[int, Any]] = []
        victims: list[Any] = []
        while self.heap and len(victims) < n:
            entry = heappop(self.heap)
            stamp, key = entry
            if self.stamps.get(key) != stamp:
                continue  # stale: the key was restamped, pinned or removed since
            popped.append(entry)
            if key not in protected:
                victims.append(key)
        chosen = set(victims) if len(victims) == n else set()
        for entry in popped:
            if entry[1] not in chosen:
                heappush(self.heap, entry)
        if not chosen:
            return None
        for key in victims:
            del self.stamps[key]
        return [(key, self.blocks.pop(key)) for key in victims]

    def clear(self) -> None:
        self.blocks.clear()
        self.stamps.clear()
        self.heap.clear()
        self.clock = 0

    def mark_evictable(self, key: Any) -> None:
        # An already idle key keeps its place (the seed's assignment does).
        if key not in self.stamps:
            self._restamp(key)
            self._enter(key)
            self._maybe_compact()

    def mark_non_evictable(self, key: Any) -> None:
        del self.stamps[key]
