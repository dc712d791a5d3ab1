"""faulty: EVICT-IDLE-ONLY

Re-creates spec/bugs.md V9 (the non-mainline "prefetch" LRU) and risk pattern 1
of spec/contract.md: a first pass over every block takes those with
``ref_cnt == -1`` ("speculative, expendable") before the idle list is
walked. Under the manager these are stores still in flight, whose slots
would be reallocated while the worker writes them.

Expected id: the victim is a block in flight, so the outcome breaks both
EVICT-IDLE-ONLY and INSERT-IN-FLIGHT-NOT-ELIGIBLE; spec/evict.md fixes that
an outcome with a victim that is not idle is reported as EVICT-IDLE-ONLY,
and here the fault sits in ``evict`` itself.
"""

from collections.abc import Collection
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        chosen = [
            k for k, b in self.blocks.items() if b.ref_cnt == -1 and k not in protected
        ][:n]  # the fault: in-flight blocks first
        for key in self.evictable_blocks:
            if len(chosen) == n:
                break
            if key not in protected:
                chosen.append(key)
        if len(chosen) < n:
            return None
        for key in chosen:
            self.evictable_blocks.pop(key, None)
        return [(key, self.blocks.pop(key)) for key in chosen]
