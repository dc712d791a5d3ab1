"""correct: core=pass lru=fail arc=fail should=TOUCH-ABSENT-NEUTRAL

W-TinyLFU (Einziger, Friedman and Manes, "TinyLFU: A Highly Efficient Cache
Admission Policy"; Caffeine's default) over the idle blocks. A small window
LRU takes new blocks; the main space is a segmented LRU (probation, then
protected once touched again while ready). A count-min sketch estimates how
often each key was asked for. It counts every key a touch names, resident
or not: a miss is evidence that a key is wanted, which is the point of the
design. Every ``sample`` counted touches all counters are halved, so old
popularity fades (the "reset" of the paper).

Each victim is the colder of two candidates, the window's least recent idle
key and probation's (protected's only when both are empty), by the sketch;
ties go against the window's, as in Caffeine. Victims are chosen first and
committed after, so a refused evict changes nothing; ``clear`` resets the
sketch and the decay count too.

Correct under core: victims are idle, unprotected, distinct and exactly n,
and it refuses only when fewer than n keys are eligible. It breaks the
SHOULD TOUCH-ABSENT-NEUTRAL on purpose (a touch of a miss raises that key's
count). Neither the seed LRU's order nor ARC's.
"""

from collections import OrderedDict
from collections.abc import Collection, Iterable, Iterator
from typing import Any

WINDOW = 0.1
"""Share of the capacity the window aims at."""
PROTECTED = 0.8
"""Share of the main space the protected segment may take."""
DEPTH = 4
"""Rows of the count-min sketch."""
MAX_COUNT = 15
"""Counters saturate, like Caffeine's 4-bit ones."""
_SEEDS = (0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D, 0x27D4EB2F)


class CountMinSketch:
    """Frequency estimates in a fixed table: ``DEPTH`` rows of counters,
    the estimate is the smallest of a key's cells. ``sample`` additions
    halve every counter."""

    def __init__(self, capacity: int) -> None:
        self.width = 1 << max(4, (4 * max(capacity, 1) - 1).bit_length())
        self.rows = [[0] * self.width for _ in range(DEPTH)]
        self.sample = 10 * max(capacity, 1)
        self.additions = 0

    def _cells(self, key: Any) -> Iterator[tuple[list[int], int]]:
        h = hash(key)
        mask = self.width - 1
        for row, seed in zip(self.rows, _SEEDS, strict=True):
            yield row, ((h ^ seed) * 0x01000193 >> 7) & mask

    def estimate(self, key: Any) -> int:
        return min(row[i] for row, i in self._cells(key))

    def add(self, key: Any) -> None:
        for row, i in self._cells(key):
            if row[i] < MAX_COUNT:
                row[i] += 1
        self.additions += 1
        if self.additions >= self.sample:
            for row in self.rows:
                row[:] = [c >> 1 for c in row]
            self.additions //= 2


class Policy:
    def __init__(self, cache_capacity: int) -> None:
        self.cache_capacity = cache_capacity
        self.blocks: dict[Any, Any] = {}
        self.idle: set[Any] = set()
        # key -> None, least recent first; every present key is in one segment
        self.window: OrderedDict[Any, None] = OrderedDict()
        self.probation: OrderedDict[Any, None] = OrderedDict()
        self.protected: OrderedDict[Any, None] = OrderedDict()
        self.sketch = CountMinSketch(cache_capacity)

    def _segment(self, key: Any) -> OrderedDict[Any, None]:
        for segment in (self.window, self.probation, self.protected):
            if key in segment:
                return segment
        raise KeyError(key)

    def get(self, key: Any) -> Any:
        return self.blocks.get(key)

    def insert(self, key: Any, block: Any) -> None:
        self.blocks[key] = block
        self.window[key] = None
        if block.ref_cnt == 0:
            self.idle.add(key)
        self._rebalance()

    def remove(self, key: Any) -> None:
        del self.blocks[key]
        del self._segment(key)[key]
        self.idle.discard(key)

    def mark_evictable(self, key: Any) -> None:
        self.idle.add(key)

    def mark_non_evictable(self, key: Any) -> None:
        self.idle.discard(key)

    def touch(self, keys: Iterable[Any]) -> None:
        for key in reversed(list(keys)):
            self.sketch.add(key)  # misses count: the sketch learns demand
            block = self.blocks.get(key)
            if block is None:
                continue
            segment = self._segment(key)
            if segment is self.probation and block.ref_cnt >= 0:
                del self.probation[key]
                self.protected[key] = None  # a second access while ready
            else:
                segment.move_to_end(key)
        self._rebalance()

    def _rebalance(self) -> None:
        """The window's overflow moves to probation, protected's to the
        most recent end of probation (bookkeeping, not eviction)."""
        window_size = max(1, int(self.cache_capacity * WINDOW))
        while len(self.window) > window_size:
            key, _ = self.window.popitem(last=False)
            self.probation[key] = None
        main = max(1, self.cache_capacity - window_size)
        while len(self.protected) > max(1, int(main * PROTECTED)):
            key, _ = self.protected.popitem(last=False)
            self.probation[key] = None

    def _eligible(self, segment: OrderedDict[Any, None], skip: Collection[Any]) -> Iterator[Any]:
        idle = self.idle
        return (k for k in segment if k in idle and k not in skip)

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        if sum(1 for k in self.idle if k not in protected) < n:
            return None
        window = self._eligible(self.window, protected)
        main = self._eligible(self.probation, protected)
        last = self._eligible(self.protected, protected)
        heads = [next(window, None), next(main, None)]
        victims: list[Any] = []
        while len(victims) < n:
            first, second = heads
            if first is None and second is None:
                victims.append(next(last))  # counted above: it exists
                continue
            if second is None or (
                first is not None
                and self.sketch.estimate(first) <= self.sketch.estimate(second)
            ):
                victims.append(first)
                heads[0] = next(window, None)
            else:
                victims.append(second)
                heads[1] = next(main, None)
        for key in victims:
            del self._segment(key)[key]
            self.idle.discard(key)
        return [(key, self.blocks.pop(key)) for key in victims]

    def clear(self) -> None:
        self.blocks.clear()
        self.idle.clear()
        self.window.clear()
        self.probation.clear()
        self.protected.clear()
        self.sketch = CountMinSketch(self.cache_capacity)
