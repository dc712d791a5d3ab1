"""faulty: EVICT-REMOVES

Synthetic mutant (evicted keys are absent afterwards): ``evict`` takes
the victims out of the idle list and returns them, but forgets to drop them
from the block map, so a lookup still reports a hit on a slot the manager
has already freed and handed to another key.
"""

from collections.abc import Collection
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        victims = super().evict(n, protected)
        for key, block in victims or ():
            self.blocks[key] = block  # the fault: the victim stays present
        return victims
