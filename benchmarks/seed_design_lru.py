"""The seed's design, written plainly: the baseline the reference LRU is
measured against (``python -m benchmarks``, section "LRU vs seed design").

Two structures, as the seed LRU has them: ``blocks``, a dict of every
present key, and ``idle``, an OrderedDict of the keys whose block has
ref_cnt 0, least recent first. Each method does the obvious thing with
them; no fast paths. Written for policyspec from the seed's description
(spec/lru.md), not copied from vLLM. tests/test_engine_fast.py
checks that it is an exact seed LRU.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Iterable
from typing import Any

__all__ = ["SeedDesignLRU"]


class SeedDesignLRU:
    """A dict of blocks plus an OrderedDict of idle keys."""

    def __init__(self, cache_capacity: int) -> None:
        self.blocks: dict[Any, Any] = {}
        self.idle: OrderedDict[Any, None] = OrderedDict()

    def get(self, key: Any) -> Any:
        return self.blocks.get(key)

    def insert(self, key: Any, block: Any) -> None:
        self.blocks[key] = block
        if block.ref_cnt == 0:
            self.idle[key] = None

    def remove(self, key: Any) -> None:
        del self.blocks[key]
        self.idle.pop(key, None)

    def touch(self, keys: Iterable[Any]) -> None:
        # Last to first, so that the first key ends up the most recent.
        for key in reversed(list(keys)):
            if key in self.idle:
                self.idle.move_to_end(key)

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        chosen = []
        for key in self.idle:
            if key in protected:
                continue
            block = self.blocks[key]
            assert block.ref_cnt == 0, "an idle key must have an idle block"
            chosen.append((key, block))
            if len(chosen) == n:
                break
        if len(chosen) < n:
            return None
        for key, _ in chosen:
            del self.idle[key]
            del self.blocks[key]
        return chosen

    def clear(self) -> None:
        self.blocks.clear()
        self.idle.clear()

    def mark_evictable(self, key: Any) -> None:
        self.idle[key] = None

    def mark_non_evictable(self, key: Any) -> None:
        del self.idle[key]
