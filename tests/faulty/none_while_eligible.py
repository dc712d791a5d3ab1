"""faulty: EVICT-LIVENESS

Risk pattern 3 of spec/contract.md (None although enough eligible
blocks exist, some by design): an admission rule refuses any eviction that
would take more than half of the idle blocks. EVICT-LIVENESS is a SHOULD, so
the run must report it but pass, and fail only with ``--strict``.
"""

from collections.abc import Collection
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if 2 * n > len(self.evictable_blocks):
            return None  # the fault (by design): keep at least half
        return super().evict(n, protected)
