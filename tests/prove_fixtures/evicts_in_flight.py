"""faulty: EVICT-IDLE-ONLY (spec/bugs.md V9): evict takes every block whose
ref_cnt is 0 or below, scanning all blocks, so a store still in flight
(-1) is evicted and its slot reused while the worker writes it. With its
hand-written pair (``--abstraction declared``)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from list_lru import POLICYSPEC_ABSTRACTION, ListLRU

__all__ = ["POLICYSPEC_ABSTRACTION", "Policy"]


class Policy(ListLRU):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        chosen = [k for k, b in self.blocks.items() if b.ref_cnt <= 0 and k not in protected]
        chosen = chosen[:n]  # the fault: ref_cnt -1 counts as evictable
        if len(chosen) < n:
            return None
        for key in chosen:
            if key in self.order:
                self.order.remove(key)
        return [(key, self.blocks.pop(key)) for key in chosen]
