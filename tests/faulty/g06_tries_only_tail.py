"""faulty: LRU-LIVENESS profile=lru

Re-creates spec/bugs.md G6 (temporalio/temporal PR #2353): the LRU tried only its
tail, and when that entry was pinned it reported the cache full. Here
``evict(n, P)`` looks only at the n least recent idle keys and returns None
when any of them is protected, although other idle keys could be taken.
"""

from collections.abc import Collection
from itertools import islice
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        tail = list(islice(self.evictable_blocks, n))
        if len(tail) < n or any(k in protected for k in tail):
            return None  # the fault: gives up instead of looking further
        return super().evict(n, protected)
