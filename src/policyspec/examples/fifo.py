"""The ``fifo`` profile's refinement (spec/fifo.md): idle keys are evicted
in the order their keys were inserted, whatever was touched, loaded or
marked since. The worked example of spec/extending.md: one module, one
registry file, one spec page, and every engine checks it.
"""

from __future__ import annotations

from collections.abc import Collection

from policyspec import IDLE, Diagnosis, Primitive, Requests, State

__all__ = ["FIFORefinement"]

Order = tuple[int, ...]
"""The present keys, oldest insert first: the refinement's own state."""


class FIFORefinement:
    """First in, first out (implements ``model.step.Refinement``)."""

    order_requirement = "FIFO-EVICT-ORDER"
    liveness_requirement = "FIFO-LIVENESS"
    keeps_idle_order = False  # touch and mark_evictable move the core idle list, not FIFO

    def start(self, capacity: int) -> Order:
        return ()

    def apply(
        self, ext: Order, state: State, call: Primitive, requests: Requests
    ) -> tuple[Order, tuple[str, ...]]:
        op = call[0]
        if op == "insert":
            return (*ext, call[1]), ("FIFO-INSERT-NEWEST",)
        if op == "remove":
            return tuple(k for k in ext if k != call[1]), ()
        if op == "clear":
            return (), ()
        if op in ("touch", "mark_evictable", "mark_non_evictable"):
            return ext, ("FIFO-ORDER-KEPT",)
        return ext, ()  # a manager write of ref_cnt

    def evict(
        self, ext: Order, state: State, n: int, protected: Collection[int]
    ) -> tuple[Order, list[int] | None, tuple[str, ...]]:
        if n == 0:
            return ext, [], ()
        eligible = [
            k for k in ext
            if k in state.idle and state.refs[k] == IDLE and k not in protected
        ]
        if len(eligible) < n:
            return ext, None, ()
        chosen = eligible[:n]
        gone = set(chosen)
        return tuple(k for k in ext if k not in gone), chosen, ("FIFO-ORDER-KEPT",)

    def culprit(self, op: str) -> str:
        return "FIFO-INSERT-NEWEST" if op == "insert" else "FIFO-ORDER-KEPT"

    def diagnosis(self) -> Diagnosis | None:
        return None
