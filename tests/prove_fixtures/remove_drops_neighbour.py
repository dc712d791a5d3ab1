"""faulty: REMOVE-DROPS (spec/bugs.md V10): remove of an idle key also drops the
next idle key from the order list, which then can never be evicted."""

from __future__ import annotations

from typing import Any

from list_lru import POLICYSPEC_ABSTRACTION, ListLRU

__all__ = ["POLICYSPEC_ABSTRACTION", "Policy"]


class Policy(ListLRU):
    def remove(self, key: Any) -> None:
        del self.blocks[key]
        if key in self.order:
            at = self.order.index(key)
            del self.order[at : at + 2]  # the fault: one too many
