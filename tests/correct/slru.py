"""correct: core=pass lru=fail arc=fail

Segmented LRU, the design of vLLM PR #38984 (an SLRU cache policy for CPU
offloading): a block enters a probationary segment; a block touched again
while ready is promoted to a protected segment of at most 80% of the cache,
whose least recent idle block falls back to the most recent end of
probation when it overflows. ``evict`` takes idle, unprotected blocks from
probation's least recent end first, then from the protected segment's; it
chooses before it removes, so a refusal changes nothing. A block being
read or written keeps its segment and leaves the idle order; it comes back
at its segment's most recent end.

Every call costs time in proportion to the keys it names (``evict``: the
victims and the protected idle keys it passes over), whatever the cache's
size: the adaptive policy of benchmarks/trace_speed.py, which plays
Mooncake's traces at 10,000 to 100,000 blocks. Neither the seed LRU's order
nor ARC's.
"""

from collections import OrderedDict
from collections.abc import Collection, Iterable
from typing import Any

PROTECTED_SHARE = 0.8


class Policy:
    def __init__(self, cache_capacity: int) -> None:
        self.cache_capacity = cache_capacity
        self.blocks: dict[Any, Any] = {}
        self.promoted: set[Any] = set()
        """Keys in the protected segment (idle or not)."""
        self.probation: OrderedDict[Any, None] = OrderedDict()
        self.protected: OrderedDict[Any, None] = OrderedDict()
        """The idle keys of each segment, least recent first."""

    def get(self, key: Any) -> Any:
        return self.blocks.get(key)

    def insert(self, key: Any, block: Any) -> None:
        self.blocks[key] = block
        if block.ref_cnt == 0:
            self.probation[key] = None

    def _idle_list(self, key: Any) -> OrderedDict[Any, None]:
        return self.protected if key in self.promoted else self.probation

    def remove(self, key: Any) -> None:
        self.blocks.pop(key, None)
        self.probation.pop(key, None)
        self.protected.pop(key, None)
        self.promoted.discard(key)

    def mark_evictable(self, key: Any) -> None:
        if key in self.blocks:
            self._idle_list(key)[key] = None

    def mark_non_evictable(self, key: Any) -> None:
        self.probation.pop(key, None)
        self.protected.pop(key, None)

    def touch(self, keys: Iterable[Any]) -> None:
        for key in reversed(list(keys)):  # the head of a prefix ends most recent
            block = self.blocks.get(key)
            if block is None or block.ref_cnt < 0:
                continue  # absent, or still being written: not a use
            idle = key in self.probation or key in self.protected
            self.probation.pop(key, None)
            self.protected.pop(key, None)
            self.promoted.add(key)
            if idle:
                self.protected[key] = None
        limit = max(1, int(self.cache_capacity * PROTECTED_SHARE))
        while len(self.promoted) > limit and self.protected:
            demoted, _ = self.protected.popitem(last=False)
            self.promoted.discard(demoted)
            self.probation[demoted] = None

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        victims: list[Any] = []
        for idle in (self.probation, self.protected):
            if len(victims) == n:
                break
            for key in idle:
                if key not in protected:
                    victims.append(key)
                    if len(victims) == n:
                        break
        if len(victims) < n:
            return None
        out = []
        for key in victims:
            self.probation.pop(key, None)
            self.protected.pop(key, None)
            self.promoted.discard(key)
            out.append((key, self.blocks.pop(key)))
        return out

    def clear(self) -> None:
        self.blocks.clear()
        self.promoted.clear()
        self.probation.clear()
        self.protected.clear()
