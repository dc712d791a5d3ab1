"""faulty: EVICT-IDLE-ONLY, a third-party policy with no abstraction pair of
its own (prove derives one; the CrossHair canary of tests/test_prove.py).
evict scans every block and takes the first n not being read, in flight
ones included (spec/bugs.md V9)."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any


class Policy:
    def __init__(self, cache_capacity: int) -> None:
        self.blocks: dict[Any, Any] = {}

    def get(self, key: Any) -> Any:
        return self.blocks.get(key)

    def insert(self, key: Any, block: Any) -> None:
        self.blocks[key] = block

    def remove(self, key: Any) -> None:
        del self.blocks[key]

    def touch(self, keys: Iterable[Any]) -> None:
        return None

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        chosen = [k for k, b in self.blocks.items() if b.ref_cnt <= 0 and k not in protected]
        if len(chosen) < n:
            return None
        return [(key, self.blocks.pop(key)) for key in chosen[:n]]  # the fault: -1 too

    def clear(self) -> None:
        self.blocks.clear()

    def mark_evictable(self, key: Any) -> None:
        return None

    def mark_non_evictable(self, key: Any) -> None:
        return None
