"""faulty: LRU-MARK-RECENCY: mark_evictable puts the key at the least
recent end, so a block that just finished loading is the next victim.
The pair is given explicitly, as a third party would for its own class."""

from __future__ import annotations

from typing import Any

from policyspec.reference import lru_abstraction
from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def mark_evictable(self, key: Any) -> None:
        self.evictable_blocks[key] = None
        self.evictable_blocks.move_to_end(key, last=False)  # the fault


POLICYSPEC_ABSTRACTION = (lru_abstraction.to_model, lru_abstraction.from_model)
