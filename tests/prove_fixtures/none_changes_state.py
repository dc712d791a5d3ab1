"""faulty: EVICT-ATOMIC (spec/bugs.md V2): evict removes each candidate as it
finds it and returns None when it runs short, so a failed eviction has
already dropped keys."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from list_lru import POLICYSPEC_ABSTRACTION, ListLRU

__all__ = ["POLICYSPEC_ABSTRACTION", "Policy"]


class Policy(ListLRU):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        result = []
        for key in list(self.order):
            if len(result) == n:
                break
            if key not in protected:
                self.order.remove(key)  # the fault: committed before success is known
                result.append((key, self.blocks.pop(key)))
        return result if len(result) == n else None
