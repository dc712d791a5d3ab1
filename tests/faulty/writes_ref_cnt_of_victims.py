"""faulty: BLOCK-NO-WRITE

Synthetic mutant (the policy never writes ``ref_cnt``): ``evict`` marks each
victim's block as dead by writing ``ref_cnt = -1`` before returning it. The
manager frees the block id and may reuse the object's slot while the policy
has changed a field that only the manager owns.
"""

from collections.abc import Collection
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        victims = super().evict(n, protected)
        for _, block in victims or ():
            block.ref_cnt = -1  # the fault
        return victims
