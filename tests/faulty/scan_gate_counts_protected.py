"""faulty: EVICT-PROTECTED-ABSENT-NEUTRAL engine=metamorphic also=EVICT-LIVENESS

Risk pattern 3 of spec/contract.md (refusals by design) in a form the
spec advises against: a scan-resistance gate that refuses to evict for "large"
stores, measuring a store by ``len(protected)``. The manager's ``protected``
holds the keys it is about to insert, which are absent, so the answer
depends on how many new keys a store brings rather than on what the policy
holds (spec/evict.md, EVICT-PROTECTED-ABSENT-NEUTRAL, a SHOULD since an
admission policy may weigh a store's candidates on purpose). The refusal
is an EVICT-LIVENESS failure (a SHOULD under core); comparing runs with and
without absent keys in ``protected`` names the cause.
"""

from collections.abc import Collection
from typing import Any

from policyspec.reference.lru import LRUCachePolicy

SCAN = 4
"""Stores of more keys than this are treated as scans."""


class Policy(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n and len(protected) > SCAN:
            return None  # the fault: absent keys count
        return super().evict(n, protected)
