"""faulty: EVICT-IDLE-ONLY also=TOUCH-KEEPS-MEMBERSHIP,MANAGER-NO-LOST-DATA,MANAGER-IDLE-COUNT

A bulk path for long touch lists. Moving each idle key to the most recent
end costs one call per key, so for a touch of more than ``BULK`` keys this
policy rebuilds the idle order in one pass instead: the idle keys the touch
does not name, then the named ones, last named first. The rebuild asks
whether a named key is *present* where it must ask whether it is *idle*, so
a block in flight or being read that the touch names becomes idle: the next
``evict`` may hand out its slot while a store is still writing it or a load
is still reading it. The touch breaks TOUCH-KEEPS-MEMBERSHIP; what the
harness sees is the eviction of a busy block (EVICT-IDLE-ONLY).

Size: a touch of 257 keys or more (any mix of states, absent keys count)
that names a block in flight or being read; a touch of 256 keys takes the
per-key path and is correct.

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
        named = dict.fromkeys(ordered)  # first occurrences, in order
        rest = [key for key in self.evictable_blocks if key not in named]
        moved = [key for key in reversed(named) if key in self.blocks]  # the fault: not idle
        self.evictable_blocks = OrderedDict.fromkeys(rest + moved)
