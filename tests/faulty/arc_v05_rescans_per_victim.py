"""faulty: ARC-EVICT-LINEAR profile=arc engine=evict-linear

Re-creates spec/bugs.md V5 (vLLM PR #50992): batch eviction restarted its search
from the least recent end of T1 or T2 for every victim, skipping the keys
already chosen, so one ``evict(n)`` cost O(n x size): 5,000 victims from a
10,000-block cache took about 700 ms instead of 5 ms. The victims are the
right ones, so only the evict-linear engine sees it.
"""

from collections.abc import Collection
from typing import Any

from policyspec.reference.arc import ARCCachePolicy


class Policy(ARCCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        chosen: set[Any] = set()
        picks: list[tuple[Any, Any, bool]] = []
        t1_left = len(self.t1)
        for _ in range(n):
            prefer_t1 = t1_left >= int(self.target_t1_size)
            order = ((self.t1, True), (self.t2, False))
            found = None
            for entries, from_t1 in order if prefer_t1 else order[::-1]:
                # the fault: every victim restarts from the least recent end
                for key, block in entries.items():
                    if block.ref_cnt == 0 and key not in protected and key not in chosen:
                        found = (key, block, from_t1)
                        break
                if found is not None:
                    break
            if found is None:
                return None
            chosen.add(found[0])
            picks.append(found)
            t1_left -= found[2]
        return self._commit(picks)
