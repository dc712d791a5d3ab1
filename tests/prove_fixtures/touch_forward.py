"""faulty: LRU-TOUCH-ORDER: touch walks the keys first to last, so the head
of a prefix ends up least recent (vllm#39021). A subclass of the reference
LRU that keeps its two structures: it inherits the registered pair."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def touch(self, keys: Iterable[Any]) -> None:
        for key in keys:  # the fault: forwards
            if key in self.evictable_blocks:
                self.evictable_blocks.move_to_end(key)
