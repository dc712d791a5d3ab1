"""The ``lru-0.33`` and ``lru-0.34`` profiles' refinements (spec/lru033.md):
vLLM's request-ranked LRU, as 0.33.0 and 0.34.0 ship it, where a request's
finish commits recency and pinning never moves a rank. 0.34.0's LRU is the
same minus ``touch`` (``LRU034Refinement``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar

from policyspec.model.actions import Action, Primitive
from policyspec.model.probe import Probe, ProbeResult
from policyspec.model.request import Requests, offload_key, ordered_keys
from policyspec.model.state import IDLE, IN_FLIGHT, State
from policyspec.model.step import Diagnosis, Measure

__all__ = ["LRU033Diagnosis", "LRU033Refinement", "LRU034Refinement", "Ranks"]

Rank = tuple[int, int]


@dataclass(frozen=True)
class Ranks:
    """The request-ranked LRU's state beside the core state."""

    rank: Mapping[int, Rank] = field(default_factory=dict)
    """The rank of every present key."""
    next_rank: int = 0
    """The last global rank handed out (ranks count up from 1)."""
    request_rank: Mapping[int, tuple[int, int]] = field(default_factory=dict)
    """The rank each request got, and the generation it got it in."""
    generation: int = 0

    def fresh(self) -> tuple[Ranks, int]:
        """The next global rank, and the state that handed it out."""
        return replace(self, next_rank=self.next_rank + 1), self.next_rank + 1

    def of_request(self, r: int) -> tuple[Ranks, int]:
        """Request ``r``'s rank: the one it got in this generation, or a
        fresh one (a rank from before a clear is not reused)."""
        held = self.request_rank.get(r)
        if held is not None and held[1] == self.generation:
            return self, held[0]
        after, rank = self.fresh()
        return replace(after, request_rank={**self.request_rank, r: (rank, self.generation)}), rank

    def recent(self, keys: Iterable[int], present: Collection[int]) -> Ranks:
        """Fresh ranks for the present ones of ``keys``, in that order (so the
        last one named ends most recent)."""
        ranks, step = dict(self.rank), self.next_rank
        for key in keys:
            if key in present:
                step += 1
                ranks[key] = (step, 0)
        return replace(self, rank=ranks, next_rank=step)


class LRU033Refinement:
    """vLLM 0.33.0's LRU (implements ``model.step.Refinement``)."""

    order_requirement = "LRU033-EVICT-ORDER"
    liveness_requirement = "LRU033-LIVENESS"
    keeps_idle_order = False
    _CULPRITS: ClassVar[dict[str, str]] = {
        "insert": "LRU033-INSERT-RANK",
        "on_request_access": "LRU033-ACCESS-RANK",
        "on_request_finished": "LRU033-FINISH-COMMIT",
        "touch": "LRU033-TOUCH-COMMIT",
        "on_store_miss": "LRU033-TOUCH-COMMIT",
        "mark_evictable": "LRU033-MARK-KEEPS-RANK",
        "clear": "LRU033-CLEAR-RESET",
    }

    def start(self, capacity: int) -> Ranks:
        return Ranks()

    def apply(
        self, ext: Ranks, state: State, call: Primitive, requests: Requests
    ) -> tuple[Ranks, tuple[str, ...]]:
        op = call[0]
        present = state.refs
        if op == "insert":
            key = call[1]
            r = call[3] if len(call) > 3 else None
            position = requests.get(r).positions.get(key) if r is not None else None
            if r is None or position is None:
                after, rank = ext.fresh()
                return replace(after, rank={**after.rank, key: (rank, 0)}), (
                    "LRU033-INSERT-RANK",)
            after, rank = ext.of_request(r)
            return replace(after, rank={**after.rank, key: (rank, -position)}), (
                "LRU033-INSERT-RANK",)
        if op == "remove":
            return replace(ext, rank={k: v for k, v in ext.rank.items() if k != call[1]}), ()
        if op in ("touch", "on_store_miss"):
            keys = call[1] if op == "touch" else call[2]  # 0.33's on_store_miss is touch
            moves = any(k in present for k in keys)
            return ext.recent(reversed(list(keys)), present), (
                ("LRU033-TOUCH-COMMIT",) if moves else ())
        if op == "on_request_access":
            return _access(ext, present, requests.get(call[1]).positions, call[1], call[2])
        if op == "on_request_finished":
            r, groups = call[1], call[2]
            keys = ordered_keys(groups, requests.get(r).positions)
            moves = any(k in present for k in keys)
            return ext.recent(reversed(keys), present), (
                ("LRU033-FINISH-COMMIT",) if moves else ())
        if op == "clear":
            return Ranks(request_rank=ext.request_rank, generation=ext.generation + 1), (
                "LRU033-CLEAR-RESET",)
        if op == "mark_evictable":
            return ext, ("LRU033-MARK-KEEPS-RANK",)
        return ext, ()

    def evict(
        self, ext: Ranks, state: State, n: int, protected: Collection[int]
    ) -> tuple[Ranks, list[int] | None, tuple[str, ...]]:
        if n == 0:
            return ext, [], ()
        eligible = [
            k for k in state.idle if state.refs.get(k) == IDLE and k not in protected
        ]
        if len(eligible) < n:
            return ext, None, ()
        eligible.sort(key=lambda k: (ext.rank[k], offload_key(k)))
        chosen = eligible[:n]
        gone = set(chosen)
        return replace(ext, rank={k: v for k, v in ext.rank.items() if k not in gone}), chosen, ()

    def culprit(self, op: str) -> str:
        return self._CULPRITS.get(op, "LRU033-EVICT-ORDER")

    def diagnosis(self) -> Diagnosis | None:
        return LRU033Diagnosis(self)


class LRU034Refinement(LRU033Refinement):
    """vLLM 0.34.0's LRU: 0.33.0's without ``touch``, whose store misses
    commit nothing (its base class's ``on_store_miss`` does nothing)."""

    _CULPRITS: ClassVar[dict[str, str]] = {
        **LRU033Refinement._CULPRITS,
        "on_store_miss": "LRU034-STORE-MISS-KEEPS-RANK",
    }

    def apply(
        self, ext: Ranks, state: State, call: Primitive, requests: Requests
    ) -> tuple[Ranks, tuple[str, ...]]:
        if call[0] == "on_store_miss":
            return ext, ("LRU034-STORE-MISS-KEEPS-RANK",)
        return super().apply(ext, state, call, requests)


def _access(
    ext: Ranks, present: Mapping[int, int], positions: Mapping[int, int], r: int,
    keys: Iterable[int],
) -> tuple[Ranks, tuple[str, ...]]:
    """on_request_access: a resident key with a position rises to its
    request's rank, never falls (the request is seen once, in batches)."""
    after, request_rank = ext.of_request(r)
    ranks = dict(after.rank)
    raised = False
    for key in keys:
        position = positions.get(key)
        if position is None or key not in present:
            continue
        rank = (request_rank, -position)
        if ranks[key] >= rank:
            continue
        ranks[key] = rank
        raised = True
    return replace(after, rank=ranks), ("LRU033-ACCESS-RANK",) if raised else ()


class LRU033Diagnosis:
    """``model.step.Diagnosis`` for lru-0.33: the whole order, and the same
    after completing every store and load in flight (a key in flight has a
    rank already, which only shows once it is idle). A difference names the
    call's requirement; an insert or access that used a request's rank from
    before a clear names LRU033-CLEAR-RESET."""

    def __init__(self, refinement: LRU033Refinement) -> None:
        self.refinement = refinement

    def probes(self, ext: Ranks, state: State) -> list[Probe]:
        completion: list[Action] = []
        for key, ref in state.refs.items():
            if ref == IN_FLIGHT:
                completion.append(("finish_store", key))
            completion.extend(("end_read", key) for _ in range(max(ref, 0)))
        found = []
        idle = sum(1 for ref in state.refs.values() if ref == IDLE)
        if idle:
            found.append(Probe("order", (), idle))
        if completion:
            found.append(Probe("hidden", tuple(completion), len(state.refs)))
        return found

    def blame(
        self, history: Sequence[Action], action: Action, ext: Ranks, state: State,
        results: Sequence[ProbeResult], previous: Sequence[ProbeResult],
    ) -> str | None:
        differed = {r.probe.name for r in previous if r.differs}
        new = [r for r in results if r.differs and r.probe.name not in differed]
        if not new:
            return None
        if any(r.refused for r in new):
            return "LRU033-LIVENESS"
        op: str = action[0]
        r = action[3] if op == "insert" and len(action) > 3 else (
            action[1] if op == "on_request_access" else None)
        held = ext.request_rank.get(r) if r is not None else None
        if held is not None and held[1] != ext.generation:
            return "LRU033-CLEAR-RESET"
        if op == "get":
            return "GET-PURE"
        return self.refinement.culprit(_CALL_OF.get(op, op))

    def reconsider(
        self, blamed: str, prefix: Sequence[Action], capacity: int | None, measure: Measure,
    ) -> tuple[str, str]:
        """A rank blamed (an insert, a finish, an access or a touch whose key
        kept an older place) is also what two other faults give, each told
        apart by a trial on a fresh policy. An insert or access blamed, where
        inserts rank a request's positions right among themselves but an
        access and an insert at one position do not tie (``_routes_disagree``):
        either counts positions off, and only their difference shows, so the
        order requirement. Any rank blamed, where a key removed and stored
        again goes before one stored between: evict ranked it by its removed
        past (a lazily cleaned heap that takes an old entry for a current
        one), which only evict reads, so the order requirement."""
        if blamed not in _RANKING or (capacity or 0) < 2:
            return blamed, ""
        if blamed in _POSITIONED and _routes_disagree(measure):
            return self.refinement.order_requirement, (
                "on a fresh policy, inserts of one request rank its positions as the spec "
                "does, but a key accessed at a position and a key stored at the same one "
                "are ranked apart: the access or the insert counts positions off by some "
                "amount, and no probe can tell which (only their difference shows)")
        old, between = _TRIAL, _TRIAL + 1
        trial: tuple[Action, ...] = (("insert", old, IDLE), ("insert", between, IDLE),
                                     ("remove", old), ("insert", old, IDLE))
        whole = _whole_order(measure(trial))
        if whole is None or whole.got != [old, between]:
            return blamed, ""
        return self.refinement.order_requirement, (
            "on a fresh policy, a key removed and stored again is evicted before a key stored "
            "between, at the place it held before its removal: evict ranks keys by a rank "
            "they held earlier, which is what a refresh that did not take shows")


_RANKING = frozenset({"LRU033-INSERT-RANK", "LRU033-FINISH-COMMIT", "LRU033-ACCESS-RANK",
                      "LRU033-TOUCH-COMMIT"})
"""The requirements of the calls that give a key its rank: a key stored
again after a remove, or refreshed, whose rank did not take."""

_TRIAL = 1 << 40
"""The keys of ``reconsider``'s trials: no engine uses them."""

_TRIAL_REQUEST = 1 << 29
"""The request of ``reconsider``'s trials (probes use 1 << 30)."""

_POSITIONED = frozenset({"LRU033-INSERT-RANK", "LRU033-ACCESS-RANK"})
"""The requirements of the calls that rank a key by its position."""


def _routes_disagree(measure: Measure) -> bool:
    """Whether insert and access rank one request's positions apart, on a
    fresh policy: two keys stored for a request at positions 2 and 3 come
    out in the spec's order, but a key accessed at a position and a key
    stored at the same one do not tie as the spec's (their keys' order, so
    both ways round are tried)."""
    low, high = _TRIAL, _TRIAL + 1
    r = _TRIAL_REQUEST
    inserts: tuple[Action, ...] = (("set_positions", r, ((low, 2), (high, 3))),
                                   ("insert", low, IDLE, r), ("insert", high, IDLE, r))
    trials = [(("insert", accessed, IDLE), ("set_positions", r, ((accessed, 2), (stored, 2))),
               ("on_request_access", r, (accessed,)), ("insert", stored, IDLE, r))
              for accessed, stored in ((low, high), (high, low))]
    if _order_differs(measure(inserts)) is not False:
        return False  # the inserts alone are wrong (or the trial failed): no ambiguity
    return any(_order_differs(measure(trial)) for trial in trials)


def _order_differs(results: Sequence[ProbeResult] | None) -> bool | None:
    """Whether the whole-order probe differs (None: no such answer)."""
    whole = _whole_order(results)
    return None if whole is None or whole.broken else whole.differs


def _whole_order(results: Sequence[ProbeResult] | None) -> ProbeResult | None:
    """The ``order`` probe's answer among ``results`` (None: the trial failed
    or had no idle key)."""
    return next((r for r in results or () if r.probe.name == "order"), None)

_CALL_OF: dict[str, str] = {"finish_store": "mark_evictable", "end_read": "mark_evictable",
            "start_read": "mark_non_evictable"}
"""The policy call an action ends with, when it is not the action itself."""
