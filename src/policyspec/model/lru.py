"""The ``lru`` profile's refinement: the seed LRU (spec/lru.md).

The seed LRU's order is the core state's idle list itself (model/state.py:
least recent first, and ``operations`` keep it as the seed does), so the
refinement holds no state of its own: its victims are ``lru_victims`` of
the core state. What it adds is which of its requirements each call
exercises, and which one a wrong order right after a call names.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import ClassVar

from policyspec.model.actions import Primitive
from policyspec.model.evict import lru_victims
from policyspec.model.request import Requests
from policyspec.model.state import IDLE, State
from policyspec.model.step import Diagnosis

__all__ = ["LRURefinement"]


class LRURefinement:
    """The seed LRU (implements ``model.step.Refinement``)."""

    order_requirement = "LRU-EVICT-ORDER"
    liveness_requirement = "LRU-LIVENESS"
    keeps_idle_order = True
    _CULPRITS: ClassVar[dict[str, str]] = {
        "insert": "LRU-INSERT-RECENCY",
        "mark_evictable": "LRU-MARK-RECENCY",
        "touch": "LRU-TOUCH-ORDER",
    }
    """Any other call (an evict that reorders the rest among them) breaks
    LRU-ORDER-KEPT; an evict's own victims are judged as LRU-EVICT-ORDER."""

    def start(self, capacity: int) -> None:
        return None

    def apply(
        self, ext: None, state: State, call: Primitive, requests: Requests
    ) -> tuple[None, tuple[str, ...]]:
        op = call[0]
        if op == "insert":
            return None, ("LRU-INSERT-RECENCY",) if call[2] == IDLE else ()
        if op == "mark_evictable":
            return None, ("LRU-MARK-RECENCY",)
        if op == "touch":
            moves = any(k in state.idle for k in call[1])
            return None, ("LRU-TOUCH-ORDER",) if moves else ()
        if op in ("get", "mark_non_evictable", "remove") and len(state.idle) > 1:
            return None, ("LRU-ORDER-KEPT",)
        return None, ()

    def evict(
        self, ext: None, state: State, n: int, protected: Collection[int]
    ) -> tuple[None, list[int] | None, tuple[str, ...]]:
        victims = lru_victims(state, n, protected)
        kept = victims is not None and len(state.idle) - len(victims) > 1
        return None, victims, ("LRU-ORDER-KEPT",) if kept else ()

    def culprit(self, op: str) -> str:
        return self._CULPRITS.get(op, "LRU-ORDER-KEPT")

    def diagnosis(self) -> Diagnosis | None:
        return None
