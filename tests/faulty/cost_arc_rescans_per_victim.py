"""faulty: COST-EVICT-LINEAR

vLLM's ARC before PR #50992 (spec/bugs.md V5) as a cost fault: to stay atomic,
``evict`` leaves its chosen victims in T1 and T2 until it has all n, and
finds each next victim by walking the chosen list again from its least
recent end, past every block in flight or being read and every victim
already chosen. The victims are ARC's (the arc profile's evict-linear engine
reports ARC-EVICT-LINEAR for tests/faulty/arc_v05_rescans_per_victim.py);
the work per victim grows with n: 5,000 victims from 10,000 blocks took
about 700 ms instead of 5 ms. Because ARC's lists hold the pinned blocks
too, the cost profile measures it with pinned blocks spread between the
idle ones, not in front of them, where their crossing would cost the same
for every n and hide the rescan (spec/cost.md). It also fails
COST-EVICT-PINNED: each rescan crosses the pinned blocks again.
"""

from collections import OrderedDict
from collections.abc import Collection
from typing import Any

from policyspec.reference.arc import ARCCachePolicy


def _first_eligible(
    entries: "OrderedDict[Any, Any]", protected: Collection[Any], chosen: set[Any]
) -> tuple[Any, Any] | None:
    for key, block in entries.items():  # the fault: always from the least recent end
        if block.ref_cnt == 0 and key not in protected and key not in chosen:
            return key, block
    return None


class Policy(ARCCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        chosen: set[Any] = set()
        picks: list[tuple[Any, Any, bool]] = []
        t1_left = len(self.t1)
        floor = int(self.target_t1_size)
        while len(picks) < n:
            first = (self.t1, True) if t1_left >= floor else (self.t2, False)
            second = (self.t2, False) if first[1] else (self.t1, True)
            for entries, from_t1 in (first, second):
                found = _first_eligible(entries, protected, chosen)
                if found is not None:
                    break
            else:
                return None
            chosen.add(found[0])
            picks.append((*found, from_t1))
            t1_left -= from_t1
        return self._commit(picks)
