"""faulty: EVICT-UNPROTECTED (spec/bugs.md V1): evict walks the idle keys
without looking at ``protected``."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from list_lru import POLICYSPEC_ABSTRACTION, ListLRU

__all__ = ["POLICYSPEC_ABSTRACTION", "Policy"]


class Policy(ListLRU):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        return super().evict(n, ())  # the fault: protected is dropped
