"""faulty: EVICT-UNPROTECTED

Re-creates spec/bugs.md V13 (vllm PR #50014 for issue #49902): ``protected`` is
treated as "the keys about to be inserted", so only keys the policy does not
hold yet are honoured. A caller that protects keys it holds (a promoted
block that landed but has not been read, or the already cached part of an
offered prefix) sees them evicted.
"""

from collections.abc import Collection
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        incoming = {k for k in protected if k not in self.blocks}  # the fault
        return super().evict(n, incoming)
