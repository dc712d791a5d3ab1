"""faulty: ARC-LIVENESS profile=arc engine=fast capacity=8

Re-creates spec/bugs.md V4 (vLLM PR #55461): when T1 was below its target, ARC
looked for victims only in T2 and returned None once T2 had no idle,
unprotected entry left, although T1 had enough. Stores failed needlessly.
Here the preferred list falls back to the other one only when it is T1.
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
        t1_left = len(self.t1)
        picks: list[tuple[Any, Any, bool]] = []
        while len(picks) < n:
            if t1_left >= int(self.target_t1_size) and t1:
                picks.append((*t1.pop(0), True))
                t1_left -= 1
            elif t2:
                picks.append((*t2.pop(0), False))
            else:
                return None  # the fault: no T1 fallback once T2 is used up
        return self._commit(picks)
