"""correct: core=pass lru=fail arc=fail should=EVICT-LIVENESS,EVICT-PROTECTED-ABSENT-NEUTRAL,TOUCH-ABSENT-NEUTRAL

An LRU behind a TinyLFU-style admission gate, which refuses stores on
purpose. In the seed interface the keys a store brings are the absent keys
of ``protected`` (the manager protects every offered key, and the new ones
are not present yet), and ``evict`` is the one moment the policy can say no.
The gate counts how often each key was asked for (every key a touch names,
in a bounded table of ``4 * cache_capacity`` keys). It admits a store when
the hottest newcomer has been asked for at least as often as the coldest
victim it would displace, or when the victims have never been asked for at
all; otherwise it answers None and the manager keeps what it has. A refusal
changes nothing, counts included.

A store that needs no eviction is never refused (the manager does not call
``evict`` then), and ``evict(n, protected)`` with no newcomer in
``protected`` (a caller making room for its own reasons) is plain LRU.

Correct under core: its refusals break only the SHOULDs EVICT-LIVENESS and
EVICT-PROTECTED-ABSENT-NEUTRAL, each for the reason those pages give
(admission control). Victims follow the seed LRU's order, but refusals
make it fail the exact profiles' liveness.
"""

from collections import OrderedDict
from collections.abc import Collection, Iterable
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.asked: OrderedDict[Any, int] = OrderedDict()

    def touch(self, keys: Iterable[Any]) -> None:
        keys = list(keys)
        for key in dict.fromkeys(keys):
            self.asked[key] = self.asked.get(key, 0) + 1
            self.asked.move_to_end(key)
        while len(self.asked) > 4 * self.cache_capacity:
            self.asked.popitem(last=False)
        super().touch(keys)

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        chosen = [k for k in self.evictable_blocks if k not in protected][:n]
        if len(chosen) < n:
            return None
        newcomers = [k for k in protected if k not in self.blocks]
        if newcomers:
            hottest = max(self.asked.get(k, 0) for k in newcomers)
            coldest = min(self.asked.get(k, 0) for k in chosen)
            if coldest and hottest < coldest:
                return None  # admission refused: the cache keeps its hotter blocks
        for key in chosen:
            del self.evictable_blocks[key]
        return [(key, self.blocks.pop(key)) for key in chosen]

    def clear(self) -> None:
        super().clear()
        self.asked.clear()
