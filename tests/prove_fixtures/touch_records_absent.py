"""faulty: TOUCH-KEEPS-MEMBERSHIP (spec/bugs.md V14): touch appends keys it does
not hold to the order list, so an absent key becomes "evictable"."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from list_lru import POLICYSPEC_ABSTRACTION, ListLRU

__all__ = ["POLICYSPEC_ABSTRACTION", "Policy"]


class Policy(ListLRU):
    def touch(self, keys: Iterable[Any]) -> None:
        for key in reversed(list(keys)):
            if key in self.order:
                self.order.remove(key)
                self.order.append(key)
            elif key not in self.blocks:
                self.order.append(key)  # the fault: an orphan in the order list
