"""faulty: GET-IDENTITY

Re-creates spec/bugs.md G12 (bluele/gcache issue #11: set, get, set of one key
went wrong in an ARC with expiration) in the form the caller contract
allows: a key that is inserted again after it left the cache. The policy
keeps removed and evicted blocks in a history (which also grows without
bound) and "revives" the old block object instead of storing the one
passed to ``insert``, so ``get`` returns a block the manager has freed.
"""

from collections.abc import Collection
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.history: dict[Any, Any] = {}

    def insert(self, key: Any, block: Any) -> None:
        super().insert(key, self.history.get(key, block))  # the fault: the old object

    def remove(self, key: Any) -> None:
        self.history[key] = self.blocks[key]
        super().remove(key)

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        victims = super().evict(n, protected)
        self.history.update(victims or ())
        return victims
