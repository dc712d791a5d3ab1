"""faulty: EVICT-SHAPE

Synthetic mutant (spec/sources.md I5): ``evict`` returns a lazy iterator of pairs instead of
a list. It can be consumed once, has no length, and code that tests the
result for truth or iterates it twice breaks.
"""

from collections.abc import Collection, Iterator
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def evict(  # type: ignore[override]
        self, n: int, protected: Collection[Any]
    ) -> Iterator[tuple[Any, Any]] | None:
        victims = super().evict(n, protected)
        return None if victims is None else iter(victims)  # the fault
