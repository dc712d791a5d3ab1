"""faulty: LRU-TOUCH-ORDER profile=lru

A bulk path for long touch lists that gets the order wrong. For a touch of
more than ``BULK`` keys the policy rebuilds the idle order in one pass: the
idle keys the touch does not name, then the named idle keys. It appends the
named keys in the order they are named, where the seed walks them last
first: so the head of the prefix (index 0) ends up the least recent of the
touched keys instead of the most recent, and a later ``evict`` takes the
head of a hot prefix before its tail.

Size: a touch of 257 keys or more that names at least two idle keys; a
touch of 256 keys takes the per-key path and is correct.

engine: size (the engine that draws sizes; the others stay at 64 blocks)
"""

from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from policyspec.reference.lru import LRUCachePolicy

BULK = 256


class Policy(LRUCachePolicy[Any, Any]):
    def touch(self, keys: Iterable[Any]) -> None:
        ordered = list(keys)
        if len(ordered) <= BULK:
            super().touch(ordered)
            return
        idle = self.evictable_blocks
        named = [key for key in dict.fromkeys(ordered) if key in idle]  # the fault: not reversed
        moved = set(named)
        self.evictable_blocks = OrderedDict.fromkeys([k for k in idle if k not in moved] + named)
