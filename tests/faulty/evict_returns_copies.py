"""faulty: EVICT-IDENTITY

Synthetic mutant (spec/sources.md I1, I5): ``evict`` returns a copy of each victim's block
(for instance to "snapshot" it before release) instead of the very object
inserted. The manager frees the copy's block id; any write it makes goes to
an object nobody else holds.
"""

import copy
from collections.abc import Collection
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        victims = super().evict(n, protected)
        if victims is None:
            return None
        return [(k, copy.copy(b)) for k, b in victims]  # the fault
