"""correct: core=pass lru=fail arc=fail should=TOUCH-ABSENT-NEUTRAL

A decaying-frequency scorer with a logical clock, the shape of the
session-aware policies seen in forks. The clock ticks once per lookup
batch: every ``touch`` call, empty or not (the scheduler touches a request's
keys once per lookup). A touched key's score decays by half every
``HALF_LIFE`` ticks since it was last touched and then gains 1, so keys
asked for often and lately score high. Keys looked up before they are stored
(misses) get a score too, kept in a bounded table of ``cache_capacity``
pending keys (least recently missed dropped first) and carried over when
the key is inserted: a prefix that several requests missed arrives warm.

``evict`` takes the eligible keys with the lowest current score, oldest
insertion first among equals; it chooses before it removes, so a refusal
changes nothing. ``clear`` forgets every score and the pending table; the
clock keeps running (only differences of ticks matter).

Correct under core, and on purpose it breaks the SHOULD
TOUCH-ABSENT-NEUTRAL twice: an empty touch moves the clock, and a touch of
a miss scores the key. Neither the seed LRU's order nor ARC's.
"""

import heapq
from collections import OrderedDict
from collections.abc import Collection, Iterable
from typing import Any

HALF_LIFE = 32
"""Ticks after which an untouched score has halved."""


class Policy:
    def __init__(self, cache_capacity: int) -> None:
        self.cache_capacity = cache_capacity
        self.blocks: dict[Any, Any] = {}
        self.idle: set[Any] = set()
        self.clock = 0
        # key -> (score at its last touch, tick of that touch)
        self.scores: dict[Any, tuple[float, int]] = {}
        self.pending: OrderedDict[Any, tuple[float, int]] = OrderedDict()
        self.arrival: dict[Any, int] = {}
        self.arrivals = 0

    def _current(self, key: Any) -> float:
        score, tick = self.scores[key]
        return score * 0.5 ** ((self.clock - tick) / HALF_LIFE)

    def get(self, key: Any) -> Any:
        return self.blocks.get(key)

    def insert(self, key: Any, block: Any) -> None:
        self.blocks[key] = block
        self.scores[key] = self.pending.pop(key, (0.0, self.clock))
        self.arrival[key] = self.arrivals
        self.arrivals += 1
        if block.ref_cnt == 0:
            self.idle.add(key)

    def _forget(self, key: Any) -> None:
        del self.blocks[key]
        del self.scores[key]
        del self.arrival[key]
        self.idle.discard(key)

    def remove(self, key: Any) -> None:
        self._forget(key)

    def mark_evictable(self, key: Any) -> None:
        self.idle.add(key)

    def mark_non_evictable(self, key: Any) -> None:
        self.idle.discard(key)

    def touch(self, keys: Iterable[Any]) -> None:
        self.clock += 1  # one tick per lookup batch
        for key in dict.fromkeys(keys):  # a key counts once per batch
            table = self.scores if key in self.blocks else self.pending
            score, tick = table.get(key, (0.0, self.clock))
            table[key] = (score * 0.5 ** ((self.clock - tick) / HALF_LIFE) + 1.0, self.clock)
            if table is self.pending:
                self.pending.move_to_end(key)
                if len(self.pending) > self.cache_capacity:
                    self.pending.popitem(last=False)

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        eligible = [k for k in self.idle if k not in protected]
        if len(eligible) < n:
            return None
        victims = heapq.nsmallest(n, eligible, key=lambda k: (self._current(k), self.arrival[k]))
        pairs = [(key, self.blocks[key]) for key in victims]
        for key in victims:
            self._forget(key)
        return pairs

    def clear(self) -> None:
        self.blocks.clear()
        self.idle.clear()
        self.scores.clear()
        self.pending.clear()
        self.arrival.clear()
