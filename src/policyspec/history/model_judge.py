"""Judging a history under any profile with a refinement (``arc``,
``lru-0.33``, ``fifo``, one's own) through ``ProfileModel.step``, the one
step every engine takes, so that a history is held to exactly what a check
holds a policy to. ``CoreJudge`` judges core in place at full speed; this
judge adds what a refinement dictates, and stops at the first call the
model cannot take (the core judge has already judged it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from policyspec.history import format as fmt
from policyspec.history.core import POLICY, Violation
from policyspec.model.request import Requests
from policyspec.model.step import ProfileModel
from policyspec.profiles import Profile

__all__ = ["ModelJudge"]

_PRUNE_AT = 256
"""Requests held by the model before the finished ones are dropped."""


class ModelJudge:
    """One profile's model moved along a history (spec/history.md)."""

    def __init__(self, profile: Profile, header: dict[str, Any]) -> None:
        self.profile = profile
        self.model: ProfileModel = profile.model(header.get("capacity"))
        self.call = header.get("first_call", 0) - 1
        self.first: Violation | None = None
        self.stopped: str | None = None
        """Why judging stopped before the end (None: it did not)."""
        self.seen: Counter[str] = Counter()
        self.placed: dict[int, str] = {}
        """The last call that named each present key (to name a likely
        culprit of a wrong order: ``Refinement.culprit``)."""
        if header.get("first_call", 0) or header.get("state", {}).get("keys"):
            self.stopped = ("the history starts after call 0, and the refinement's state "
                            "there is not in the header")

    def feed(self, records: Sequence[Any]) -> None:
        if self.stopped is not None or self.first is not None:
            return
        for rec in records:
            op = rec[0]
            if op in fmt.MARKERS:
                if op == fmt.POSITIONS:
                    flat = rec[2]
                    pairs = tuple(zip(flat[0::2], flat[1::2], strict=True))
                    self._step(("set_positions", rec[1], pairs))
                continue
            self.call += 1
            try:
                self._record(op, rec)
            except Exception as exc:  # the model refused the call
                self.stopped = (f"call {self.call:,} ({fmt.op_name(op)}) is one the model "
                                f"cannot take ({type(exc).__name__}: {exc}); the caller or core "
                                "verdict says why")
            if self.stopped is not None or self.first is not None:
                return

    def _step(self, call: tuple[Any, ...], observed: object = None) -> Any:
        step = self.model.step(call) if observed is None else self.model.step(call, observed)
        self.model = step.model
        return step

    def _name(self, op: int, keys: Sequence[int]) -> None:
        placed, name = self.placed, fmt.op_name(op)
        for k in keys:
            placed[k] = name

    def _record(self, op: int, rec: Sequence[Any]) -> None:
        if op == fmt.INSERT:  # not mark_evictable: the 0.33 policies keep order over pins
            self._name(op, (rec[1],))
        elif op == fmt.TOUCH:
            self._name(op, rec[1])
        elif op in (fmt.STORE_MISS, fmt.ACCESS):
            self._name(op, rec[3])
        elif op == fmt.FINISH:
            self._name(op, [k for group in rec[3] for k in group])
        elif op == fmt.CLEAR:
            self.placed.clear()
        if op == fmt.GET:
            self._step(("get", rec[1]))
        elif op == fmt.INSERT:
            self._step(("insert", rec[1], rec[3], rec[4] if rec[4] >= 0 else None))
        elif op == fmt.REMOVE:
            self._step(("remove", rec[1]))
        elif op == fmt.TOUCH:
            self._step(("touch", tuple(rec[1])))
        elif op == fmt.CLEAR:
            self._step(("clear",))
        elif op == fmt.MARK_EVICTABLE:
            self._step(("set_ref", rec[1], 0))
            self._step(("mark_evictable", rec[1]))
        elif op == fmt.MARK_NON_EVICTABLE:
            self._step(("mark_non_evictable", rec[1]))
            self._step(("set_ref", rec[1], 1))
        elif op == fmt.STORE_MISS:
            self._step(("on_store_miss", rec[1], tuple(rec[3])))
        elif op == fmt.ACCESS:
            self._step(("on_request_access", rec[1], tuple(rec[3])))
        elif op == fmt.FINISH:
            self._step(("on_request_finished", rec[1], tuple(tuple(g) for g in rec[3]),
                        frozenset(rec[4]), frozenset(rec[5])))
            self._prune()
        elif op == fmt.EVICT:
            self._evict(rec)
        else:
            self.stopped = (f"call {self.call:,} ({fmt.op_name(op)}) raised or is unknown: "
                            "the policy's state after it is not the model's")

    def _evict(self, rec: Sequence[Any]) -> None:
        n, protected = rec[1], frozenset(rec[2])
        if len(rec) > 3 and rec[3].__class__ is str:
            self.stopped = f"call {self.call:,}: evict returned {rec[3]}"
            return
        victims = None if len(rec) == 3 else list(rec[3][0::3])
        step = self.model.step(("evict", n, protected), victims)
        for rid in step.exercised:
            self.seen[rid] += 1
        refinement = self.profile.refinement
        if (victims is not None and refinement is not None
                and step.violation == refinement.order_requirement
                and self._tied(victims, step.expected)):
            return
        if step.violation is not None and step.violation != "EVICT-LIVENESS":
            culprit, why = None, ""
            if refinement is not None and step.violation == refinement.order_requirement:
                culprit, why = self._culprit(victims, step.expected)
            self.first = Violation(
                self.call, step.violation, POLICY, self.profile.name,
                f"evict({n}, {sorted(protected)}) returned "
                f"{'None' if victims is None else victims}; the {self.profile.name} profile "
                f"requires {step.expected}{why}", victims[0] if victims else None,
                culprit=culprit)
            return
        self.model = step.model

    def _culprit(self, victims: list[int] | None, expected: object) -> tuple[str | None, str]:
        """The requirement of the call that last named the first key the
        policy took out of turn (or, when it took fewer, the first key it
        left): a reading of the history, not a proof."""
        refinement = self.profile.refinement
        if refinement is None or not isinstance(expected, list):
            return None, ""
        taken = victims or []
        key = next((v for v, e in zip(taken, expected, strict=False) if v != e), None)
        if key is None:
            key = next((e for e in expected if e not in taken), None)
        op = self.placed.get(key) if key is not None else None
        if op is None:
            return None, ""
        rid = refinement.culprit(op)
        if rid == refinement.order_requirement:
            return None, ""
        return rid, (f"; key {key} was last named by {op}: likely {rid} (a reading of the "
                     "history, not a proof)")

    def _tied(self, victims: list[int], expected: object) -> bool:
        """Whether ``victims`` differ from the model's only among keys of
        equal rank (``lru-0.33``), and if so move the model on them. The
        0.33 LRU breaks a tie of ranks (two KV groups of one block, at one
        position) by comparing the real keys, which a history of small ids
        does not keep: any order among tied keys is accepted."""
        model = self.model
        rank = getattr(model.ext, "rank", None)
        if not isinstance(expected, list) or rank is None or len(victims) != len(expected):
            return False
        state = model.state
        if len(set(victims)) != len(victims) or any(
                k not in state.idle or k not in rank for k in victims):
            return False
        if sorted(rank[k] for k in victims) != sorted(rank[k] for k in expected):
            return False
        if [rank[k] for k in victims] != sorted(rank[k] for k in victims):
            return False
        from dataclasses import replace

        from policyspec.model.evict import commit_evict

        gone = set(victims)
        self.model = ProfileModel(
            model.refinement, commit_evict(state, victims),
            replace(model.ext, rank={k: v for k, v in rank.items() if k not in gone}),
            model.marked - gone, frozenset(), model.requests)
        self.seen["ties"] += 1
        return True

    def _prune(self) -> None:
        requests = self.model.requests
        if len(requests.table) < _PRUNE_AT:
            return
        kept = {r: q for r, q in requests.table.items()
                if q.generation == requests.generation and not q.finished}
        self.model = ProfileModel(self.model.refinement, self.model.state, self.model.ext,
                                  self.model.marked, self.model.pending,
                                  Requests(kept, requests.generation))
