"""The ``arc`` profile's refinement: vLLM's ARC (spec/arc.md).

The transitions are the pure functions of ``model.arc``; this module plugs
them into ``model.step`` and says which ARC requirement each call
exercises. Attribution of a wrong order goes through
``model.arc_diagnosis``, which steps variants of this refinement (ghost
lists bounded otherwise) and therefore gets the class handed in, not
imported: no cycle between the two modules.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import ClassVar

from policyspec.model import arc
from policyspec.model.actions import Primitive
from policyspec.model.arc import ArcState
from policyspec.model.arc_diagnosis import ARCDiagnosis
from policyspec.model.request import Requests, ordered_keys
from policyspec.model.state import State
from policyspec.model.step import Diagnosis

__all__ = ["ARCRefinement"]


class ARCRefinement:
    """ARC's state beside the core state, and its exact victims
    (implements ``model.step.Refinement``). ``bound``, when given, bounds
    the ghost lists and the target instead of the capacity: the diagnosis
    uses it to ask whether untrimmed ghost lists explain a policy."""

    order_requirement = "ARC-EVICT-ORDER"
    liveness_requirement = "ARC-LIVENESS"
    keeps_idle_order = False
    _CULPRITS: ClassVar[dict[str, str]] = {
        "insert": "ARC-INSERT-T1",
        "remove": "ARC-REMOVE-NO-GHOST",
        "touch": "ARC-TOUCH-ORDER",
        "mark_evictable": "ARC-MARK-NO-EFFECT",
        "mark_non_evictable": "ARC-MARK-NO-EFFECT",
        "evict": "ARC-EVICT-ORDER",
        "clear": "ARC-CLEAR-RESET",
        "on_store_miss": "ARC-STORE-MISS-ADAPT",
        "on_request_access": "ARC-ACCESS-NO-EFFECT",
        "on_request_finished": "ARC-FINISH-REUSE",
        "get": "ARC-GET-NO-EFFECT",
    }

    def __init__(self, bound: int | None = None) -> None:
        self.bound = bound

    def start(self, capacity: int) -> ArcState:
        return arc.start(capacity if self.bound is None else self.bound)

    def apply(
        self, ext: ArcState, state: State, call: Primitive, requests: Requests
    ) -> tuple[ArcState, tuple[str, ...]]:
        op = call[0]
        if op == "insert":
            return arc.insert(ext, call[1]), ("ARC-INSERT-T1",)
        if op == "remove":
            return arc.remove(ext, call[1]), ("ARC-REMOVE-NO-GHOST",)
        if op == "touch":
            return arc.touch(ext, state, call[1]), _touch_ids(ext, state, call[1])
        if op in ("mark_evictable", "mark_non_evictable"):
            return ext, ("ARC-MARK-NO-EFFECT",)
        if op == "clear":
            return arc.clear(ext), ("ARC-CLEAR-RESET",)
        if op == "on_store_miss":
            keys = call[2]
            hit = any(k in ext.b1 or k in ext.b2 for k in keys)
            return arc.store_miss(ext, keys), ("ARC-STORE-MISS-ADAPT",) if hit else ()
        if op == "on_request_access":
            return ext, ("ARC-ACCESS-NO-EFFECT",)
        if op == "on_request_finished":
            keys = ordered_keys(call[2], requests.get(call[1]).positions)
            moves = any(k in ext.t1 or k in ext.t2 for k in keys)
            after = arc.finish(ext, keys, call[3], call[4])
            return after, ("ARC-FINISH-REUSE",) if moves else ()
        if op == "get":
            return ext, ("ARC-GET-NO-EFFECT",)
        return ext, ()  # a caller's write: ARC reads readiness from the core state

    def evict(
        self, ext: ArcState, state: State, n: int, protected: Collection[int]
    ) -> tuple[ArcState, list[int] | None, tuple[str, ...]]:
        after, victims = arc.evict(ext, state, n, protected)
        return after, victims, ("ARC-EVICT-GHOSTS",) if victims else ()

    def culprit(self, op: str) -> str:
        """The ARC requirement for a wrong order first seen right after
        ``op``, for callers that do not probe (policyspec.prove); the
        engines' attribution uses ``diagnosis`` (spec/arc.md#attribution)."""
        return self._CULPRITS.get(op, "ARC-EVICT-ORDER")

    def diagnosis(self) -> Diagnosis:
        return ARCDiagnosis(ARCRefinement)


def _touch_ids(ext: ArcState, state: State, keys: Sequence[int]) -> tuple[str, ...]:
    """What a touch exercises: the walk over resident keys, the rule for a
    block still in flight, the adaptation to a ghost."""
    ids: list[str] = []
    if any(k in ext.t1 or k in ext.t2 for k in keys):
        ids.append("ARC-TOUCH-ORDER")
    if any(k in ext.t1 and not arc.is_ready(state, k) for k in keys):
        ids.append("ARC-TOUCH-NOT-READY")
    if any(k in ext.b1 or k in ext.b2 for k in keys):
        ids.append("ARC-GHOST-ADAPT")
    return tuple(ids)
