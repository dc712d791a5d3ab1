"""faulty: EVICT-ATOMIC

Re-creates spec/bugs.md G2 (Mooncake issue #2963, PR #2964): victims are
removed from the maps before an eviction notification is sent, and when the
notification fails the call gives up without putting them back. The
notification here fails deterministically on every third eviction, standing
in for a listener that is sometimes unavailable.
"""

from collections.abc import Collection
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.notifications = 0

    def _notify(self, victims: list[tuple[Any, Any]]) -> bool:
        self.notifications += 1
        return self.notifications % 3 != 0

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        victims = super().evict(n, protected)
        if victims and not self._notify(victims):
            return None  # the fault: the victims are already gone
        return victims
