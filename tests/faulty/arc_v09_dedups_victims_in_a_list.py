"""faulty: ARC-EVICT-LINEAR profile=arc engine=evict-linear

Re-creates the cost half of spec/bugs.md V9 (a "prefetch" LRU variant): its
batch eviction kept the victims chosen so far in a list and asked
``(k, b) not in candidates`` of every one, so one ``evict(n)`` cost
O(n^2). Here an ARC makes its victims unique the same way before handing
them back. The victims are the right ones and no block or key hash is
read more often: only the comparisons of keys, which the evict-linear
engine counts too, show the work.
"""

from typing import Any

from policyspec.reference.arc import ARCCachePolicy


class Policy(ARCCachePolicy[Any, Any]):
    def _commit(self, picks: list[tuple[Any, Any, bool]]) -> list[tuple[Any, Any]]:
        candidates: list[tuple[Any, Any]] = []
        for pair in super()._commit(picks):
            if pair not in candidates:  # the fault: a list scan per victim
                candidates.append(pair)
        return candidates
