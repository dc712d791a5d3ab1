"""faulty: EVICT-ATOMIC profile=arc engine=fast capacity=8

Re-creates spec/bugs.md V2 (vLLM's ARC manager before PR #37874): the eviction
loop commits each victim as soon as it finds it (out of T1 or T2, into B1 or
B2) and returns None when it runs out of candidates half way, so the keys
taken so far are gone, untracked, although the caller was told that nothing
happened. Core catches it before any ARC order is compared (spec/arc.md,
"What core already catches"): the victims' absence after a None breaks
EVICT-ATOMIC.
"""

from collections.abc import Collection
from typing import Any

from policyspec.reference.arc import ARCCachePolicy


class Policy(ARCCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        if n > len(self.t1) + len(self.t2):
            return None
        taken: list[tuple[Any, Any]] = []
        while len(taken) < n:
            prefer_t1 = len(self.t1) >= int(self.target_t1_size)
            lists = (self.t1, self.t2) if prefer_t1 else (self.t2, self.t1)
            found = None
            for entries in lists:
                found = next(
                    ((k, b) for k, b in entries.items() if b.ref_cnt == 0 and k not in protected),
                    None,
                )
                if found is not None:
                    # the fault: committed before the whole batch is known to exist
                    del entries[found[0]]
                    (self.b1 if entries is self.t1 else self.b2)[found[0]] = None
                    break
            if found is None:
                return None
            taken.append(found)
        for ghosts in (self.b1, self.b2):
            while len(ghosts) > self.cache_capacity:
                ghosts.popitem(last=False)
        return taken
