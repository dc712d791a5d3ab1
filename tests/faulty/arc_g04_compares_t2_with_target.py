"""faulty: ARC-EVICT-ORDER profile=arc engine=fast capacity=8

Re-creates spec/bugs.md G4 (1055373165/ggcache issue #14): the replace step
compared the size of T2 with the target where ARC compares T1's, and the
ghost lists were bounded by a byte budget worth about six times the
capacity. Here T1 is preferred while T2 (less the victims taken from it) is
at least int(target), and ghosts are trimmed to 6 x capacity. With the
target at 0 the two rules agree; they part once a ghost hit raises it.
"""

from collections.abc import Collection
from typing import Any

from policyspec.reference.arc import ARCCachePolicy


class Policy(ARCCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        t1 = [(k, b) for k, b in self.t1.items() if b.ref_cnt == 0 and k not in protected]
        t2 = [(k, b) for k, b in self.t2.items() if b.ref_cnt == 0 and k not in protected]
        if len(t1) + len(t2) < n:
            return None
        t2_left = len(self.t2)
        picks: list[tuple[Any, Any, bool]] = []
        while len(picks) < n:
            prefer_t1 = t2_left >= int(self.target_t1_size)  # the fault: T2's size
            if (prefer_t1 and t1) or not t2:
                picks.append((*t1.pop(0), True))
            else:
                picks.append((*t2.pop(0), False))
                t2_left -= 1
        saved, self.cache_capacity = self.cache_capacity, 6 * self.cache_capacity
        try:
            return self._commit(picks)  # ghosts trimmed to the byte budget
        finally:
            self.cache_capacity = saved
