"""One step of a profile's model: the only place the model moves.

Every engine, the vectors writer, the diagnosis and the history checker
advance the model through ``ProfileModel.step``, so there is one semantics
(tests/test_one_semantics.py holds the two in-place copies of core to it).
A refinement's per-operation requirements show only in later evictions, so
the ids a call exercises wait in ``pending`` until an eviction is compared
exactly: a PASS is an observation (spec/engines.md).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, Generic, Protocol, TypeVar

from policyspec.model import operations as ops
from policyspec.model.actions import Action, Primitive, expand, is_legal
from policyspec.model.evict import commit_evict, eligible, evict_violation, lru_victims
from policyspec.model.probe import Probe, ProbeResult
from policyspec.model.request import Requests
from policyspec.model.state import IDLE, IN_FLIGHT, State

__all__ = [
    "PREDICT",
    "PRESENCE_REQUIREMENT",
    "Diagnosis",
    "Measure",
    "ProfileModel",
    "Refinement",
    "Step",
    "set_ref",
]


PRESENCE_REQUIREMENT: Final = {
    "get": "GET-KEEPS-MEMBERSHIP",
    "insert": "INSERT-ADDS",
    "remove": "REMOVE-DROPS",
    "touch": "TOUCH-KEEPS-MEMBERSHIP",
    "mark_evictable": "MARK-KEEPS-MEMBERSHIP",
    "mark_non_evictable": "MARK-KEEPS-MEMBERSHIP",
    "evict": "EVICT-REMOVES",
    "clear": "CLEAR-EMPTIES",
    "on_store_miss": "HOOK-KEEPS-MEMBERSHIP",
    "on_request_access": "HOOK-KEEPS-MEMBERSHIP",
    "on_request_finished": "HOOK-KEEPS-MEMBERSHIP",
    "hook": "HOOK-KEEPS-MEMBERSHIP",
}
"""The requirement a wrong presence right after a call breaks, by call:
the contract of that call (spec/*.md). The model judges victims; presence
is what whoever observes the policy through ``get`` compares with it."""


class _Predict:
    def __repr__(self) -> str:
        return "PREDICT"


PREDICT: Final = _Predict()
"""``observed`` when nothing was observed: the model gives its own answer
and moves on it (the vectors writer, the diagnosis, predictions)."""


class Refinement(Protocol):
    """Exact behaviour on top of core: its own state (``ext``, None when it
    needs none) beside the core state, and the victims it dictates. Every
    method gets the core state *before* the call and must not mutate its
    arguments. spec/extending.md shows how to write one."""

    order_requirement: str
    """Reported when a policy's victims differ from the refinement's."""
    liveness_requirement: str
    """Reported when a policy returns None where the refinement evicts."""
    keeps_idle_order: bool
    """True when the victims are always ``lru_victims`` of the core state
    (the seed LRU's order, which the core idle list keeps): the fast engine
    can then use its in-place copy of the core state as the exact oracle."""

    def start(self, capacity: int) -> Any:
        """The state of a freshly built policy of ``capacity``."""
        ...

    def apply(
        self, ext: Any, state: State, call: Primitive, requests: Requests
    ) -> tuple[Any, tuple[str, ...]]:
        """The state after ``call`` (any call but ``evict``: the seed calls,
        the request hooks, the caller's writes ``set_ref`` and
        ``set_positions``, and ``get``, which must leave it as it is), and
        the requirement ids of this profile the call exercised: they are
        counted once an eviction shows them. An observation hook a later
        release adds (``("hook", name, r, keys)``) reaches every profile;
        one that does not know it leaves its state as it is (no effect on
        the order: the in-tree policies inherit the base class's no-op).
        ``state`` and ``requests`` (the requests' positions and records,
        model/request.py) are as they were before the call."""
        ...

    def evict(
        self, ext: Any, state: State, n: int, protected: Collection[int]
    ) -> tuple[Any, list[int] | None, tuple[str, ...]]:
        """The victims of ``evict(n, protected)`` (None: a refusal), the
        state after them, and the ids the eviction itself exercised for
        later evictions (e.g. that it kept the others' order)."""
        ...

    def culprit(self, op: str) -> str:
        """The requirement broken when the eviction order first diverges
        right after a call named ``op``."""
        ...

    def diagnosis(self) -> Diagnosis | None:
        """A finer attribution than ``culprit`` (witness/explain.py), or
        None: the whole eviction order is the probe."""
        ...


Measure = Callable[[Sequence[Action]], Sequence[ProbeResult] | None]
"""Replays a prefix on a fresh policy and runs a diagnosis's probes after
it; None when the prefix itself fails (witness/explain.py)."""


class Diagnosis(Protocol):
    """For a refinement whose state the eviction order alone does not show
    (blocks in flight, an adaptive target): which probes to run after a
    prefix of a failing trace, and what their answers blame."""

    def probes(self, ext: Any, state: State) -> Sequence[Probe]:
        """What to run after a prefix to compare the hidden state."""
        ...

    def blame(
        self, history: Sequence[Action], action: Action, ext: Any, state: State,
        results: Sequence[ProbeResult], previous: Sequence[ProbeResult],
    ) -> str | None:
        """The requirement ``action`` broke given the probes' results right
        after it and right before it (``previous``; ``ext``, ``state``: the
        model before it; ``history``: the actions before it), or None when
        they do not point at it."""
        ...

    def reconsider(
        self, blamed: str, prefix: Sequence[Action], capacity: int | None, measure: Measure,
    ) -> tuple[str, str]:
        """A second look at ``blamed``, which ``blame`` named for the last
        action of ``prefix``: where the probes' answers fit a fault of
        another place just as well, experiments on fresh policies
        (``measure``) may tell them apart. The requirement to report, and a
        note for the report saying why it changed ('' when ``blamed``
        stands)."""
        ...


M = TypeVar("M")


@dataclass(frozen=True, slots=True)
class Step(Generic[M]):
    """What one call did to the model (spec/extending.md). ``model`` is the
    model after the call: a new ``ProfileModel``, or an in-place
    implementation of the same step (engines/fast_oracle.py) itself."""

    model: M
    expected: object
    """get: whether the key is present; evict: the victims (model keys, in
    order) or None; anything else: None."""
    exact: bool
    """``expected`` is the only answer the profile allows (False for the
    victims of a core eviction, which may be any allowed ones)."""
    violation: str | None
    """The first requirement the observed answer breaks; None when it is
    allowed or nothing was observed."""
    exercised: tuple[str, ...]
    """Ids whose outcome this call showed (counted as checked)."""


def set_ref(state: State, key: int, ref_cnt: int) -> State:
    """The manager's write of ``ref_cnt`` (not a policy call): eligibility
    follows only when the manager then calls ``mark_*``."""
    after = state.copy()
    after.refs[key] = ref_cnt
    return after


def _unchanged(state: State, *args: object) -> State:
    """Request hooks (a later release's observation hooks too, ``hook``)
    and the scheduler's positions change no key's presence or eligibility
    (HOOK-KEEPS-MEMBERSHIP): the core state stays."""
    return state


def _insert(state: State, key: int, ref_cnt: int, request: int | None = None) -> State:
    """insert, with R9's storing request (which core does not look at)."""
    return ops.insert(state, key, ref_cnt)


_CORE: dict[str, Callable[..., State]] = {
    "set_ref": set_ref,
    "set_positions": _unchanged,
    "on_store_miss": _unchanged,
    "on_request_access": _unchanged,
    "on_request_finished": _unchanged,
    "hook": _unchanged,
    "insert": _insert,
    "remove": ops.remove,
    "touch": ops.touch,
    "mark_evictable": ops.mark_evictable,
    "mark_non_evictable": ops.mark_non_evictable,
    "clear": ops.clear,
}
"""The core transition of every call but get and evict."""

_EVICT_IDS = ("EVICT-EXACT-N", "EVICT-IDLE-ONLY")


@dataclass(frozen=True, slots=True)
class ProfileModel:
    """A profile's model: the core state, the refinement's state, and what
    has been exercised but not yet observed. Immutable: ``step`` returns a
    new one."""

    refinement: Refinement | None
    state: State
    ext: Any = None
    marked: frozenset[int] = frozenset()
    """Idle keys that became idle through ``mark_evictable`` (not inserted
    idle): a victim among them shows MARK-EVICTABLE-ELIGIBLE holding."""
    pending: frozenset[str] = frozenset()
    """The refinement's ids exercised since the last compared eviction."""
    requests: Requests = field(default_factory=Requests)
    """What the caller contract knows of the requests (model/request.py)."""

    @classmethod
    def fresh(cls, refinement: Refinement | None, capacity: int | None) -> ProfileModel:
        """The model of a freshly built policy."""
        ext = refinement.start(capacity or 0) if refinement is not None else None
        return cls(refinement, State(capacity=capacity), ext)

    @property
    def exact(self) -> bool:
        return self.refinement is not None

    def calls(self, action: Action) -> Sequence[Primitive]:
        """The manager's calls and writes for a caller action, in this state
        (``model.actions.expand``)."""
        return expand(self.state, action)

    def allows(self, action: Action) -> bool:
        """The caller contract (``model.actions.is_legal``) in this state."""
        return is_legal(self.state, action, self.requests)

    def after(self, actions: Sequence[Action]) -> ProfileModel:
        """The model after ``actions`` (caller-legal), each call answered by
        the model itself."""
        model = self
        for action in actions:
            for call in expand(model.state, action):
                model = model.step(call).model
        return model

    def step(self, call: Primitive, observed: object = PREDICT) -> Step[ProfileModel]:
        """The model after ``call`` (legal in this state: the caller
        contract is the caller's business, ``model.actions.is_legal``).
        ``observed``: for ``evict``, the policy's victims as model keys (a
        list) or None; for ``get``, ignored (the harness compares blocks)."""
        op = call[0]
        if op == "evict":
            return self._evict(call[1], call[2], observed)
        if op == "get":
            model = self
            if self.refinement is not None:  # a get changes no state, but an exact
                _, shown = self.refinement.apply(self.ext, self.state, call, self.requests)
                if shown and not self.pending.issuperset(shown):  # the profile judges it
                    model = replace(self, pending=self.pending | frozenset(shown))
            return Step(model, call[1] in self.state.refs, True, None, ())
        if op == "clock":  # time passes: nothing the model holds moves
            return Step(self, None, True, None, ())
        state = _CORE[op](self.state, *call[1:])
        ext: Any = self.ext
        ids: tuple[str, ...] = ()
        if self.refinement is not None:
            ext, ids = self.refinement.apply(self.ext, self.state, call, self.requests)
        marked = self.marked
        if op == "mark_evictable":
            marked = marked | {call[1]}
        elif op in ("mark_non_evictable", "remove"):
            marked = marked - {call[1]}
        elif op == "clear":
            marked = frozenset()
        pending = self.pending | frozenset(ids) if ids else self.pending
        requests = self.requests.after(call)
        return Step(
            ProfileModel(self.refinement, state, ext, marked, pending, requests),
            None, True, None, (),
        )

    def _evict(
        self, n: int, protected: frozenset[int], observed: object
    ) -> Step[ProfileModel]:
        state, refinement = self.state, self.refinement
        later: tuple[str, ...] = ()
        if refinement is not None:
            ext, expected, later = refinement.evict(self.ext, state, n, protected)
        else:
            ext, expected = None, lru_victims(state, n, protected)
        predicted = observed is PREDICT
        victims: list[int] | None = expected if predicted else observed  # type: ignore[assignment]
        violation = None if predicted else evict_violation(state, n, protected, victims)
        if (
            refinement is not None
            and violation in (None, "EVICT-LIVENESS")
            and victims != expected
        ):
            # A needless refusal is a MUST of an exact profile, not core's SHOULD.
            violation = (
                refinement.liveness_requirement if victims is None
                else refinement.order_requirement
            )
        exercised = self._exercised(n, protected, victims, expected)
        if violation not in (None, "EVICT-LIVENESS"):
            return Step(self, expected, refinement is not None, violation, exercised)
        if victims is None:
            after = self if refinement is None else replace(self, pending=frozenset())
        else:
            gone = set(victims)
            after = ProfileModel(
                refinement,
                commit_evict(state, victims),
                ext if refinement is not None else None,
                self.marked - gone,
                frozenset(later) if refinement is not None else frozenset(),
                self.requests,
            )
        return Step(after, expected, refinement is not None, violation, exercised)

    def _exercised(
        self, n: int, protected: Collection[int], victims: list[int] | None,
        expected: list[int] | None,
    ) -> tuple[str, ...]:
        """The ids this eviction's outcome showed: only what it could have
        got wrong in this state (an unprotected-victim check needs an idle
        protected key, a pin check needs a key being read, ...)."""
        if n == 0:
            return ("EVICT-ZERO",)
        state = self.state
        ids: list[str] = []
        if len(eligible(state, protected)) >= n:
            ids.append("EVICT-LIVENESS")
        if victims is not None:
            ids.extend(_EVICT_IDS)
            if any(k in protected for k in state.idle):
                ids.append("EVICT-UNPROTECTED")
            refs = state.refs.values()
            if any(r == IN_FLIGHT for r in refs):
                ids.append("INSERT-IN-FLIGHT-NOT-ELIGIBLE")
            if any(r > IDLE for r in refs):
                ids.append("MARK-NON-EVICTABLE-PINS")
            if any(k in self.marked for k in victims):
                ids.append("MARK-EVICTABLE-ELIGIBLE")
        refinement = self.refinement
        if refinement is not None:
            ids.append(refinement.order_requirement)
            if expected is not None:
                ids.append(refinement.liveness_requirement)
            ids.extend(sorted(self.pending))
        return tuple(ids)
