"""faulty: LRU-ORDER-KEPT profile=lru

Re-creates spec/bugs.md G11 (archethic-node PR #1092): the eviction reversed the
LRU order on every eviction. Here each successful ``evict`` returns the
right victims but leaves the remaining idle keys in reverse order, so the
next eviction takes the most recent keys. spec/lru.md names G11 under
LRU-ORDER-KEPT: a successful evict must keep the others' order.
"""

from collections import OrderedDict
from collections.abc import Collection
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        victims = super().evict(n, protected)
        if victims:
            rest = list(self.evictable_blocks)[::-1]  # the fault
            self.evictable_blocks = OrderedDict.fromkeys(rest)
        return victims
