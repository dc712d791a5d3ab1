"""faulty: EVICT-UNPROTECTED

Re-creates spec/bugs.md V1 (vllm PR #35846): before the fix, the eviction for
``prepare_store([2, 3, 4, 5])`` could pick the already cached block 2 to
make room for 3 to 5. Here ``evict`` walks the idle list without looking at
``protected`` at all, so a protected idle key is taken like any other.
"""

from collections.abc import Collection
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        return super().evict(n, ())  # the fault: protected is dropped
