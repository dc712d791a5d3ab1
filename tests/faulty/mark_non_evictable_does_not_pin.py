"""faulty: EVICT-IDLE-ONLY

Synthetic mutant (spec/sources.md I11; spec/bugs.md V11 "evict pinned", L1): a tolerant
``mark_non_evictable`` that does nothing ("evict checks ref_cnt anyway",
except that it does not). A block that a load has started to read stays in
the idle list and can be evicted while the worker copies it.

Expected id: MARK-NON-EVICTABLE-PINS describes exactly this fault, but it is
observed through an evict whose victim has ``ref_cnt > 0``, and such an
outcome is reported as EVICT-IDLE-ONLY (spec/evict.md).
"""

from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def mark_non_evictable(self, key: Any) -> None:
        pass  # the fault: the key stays eligible
