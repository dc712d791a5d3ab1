"""Naming the right requirement for an order difference.

An exact profile notices a wrong order only when an eviction returns other
victims than the refinement, but the operation that went wrong (a touch
that walked the wrong way, a mark that did not refresh recency) may have
come much earlier. ``culprit`` replays each prefix of the minimal trace and
probes the order after it, so the first prefix that differs names its last
operation through the refinement, and a report blames the call a developer
must fix.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from policyspec.environment import active
from policyspec.harness import Aborted, CallerContractError, ConformanceFailure, Lockstep
from policyspec.model.actions import Action
from policyspec.model.evict import eligible
from policyspec.model.probe import Probe, ProbeResult
from policyspec.model.state import State
from policyspec.model.step import Diagnosis, Measure, Refinement
from policyspec.profiles import Profile
from policyspec.subject import Subject
from policyspec.witness.reproduce import failure_of, replayed

__all__ = ["Placement", "culprit", "placed_culprit", "run_probe"]


def culprit(
    subject: Subject, profile: Profile, capacity: int, trace: Sequence[Action], requirement: str,
    deadline: float | None = None,
) -> str:
    """The requirement to report for a failure first seen as ``requirement``
    (kept when ``deadline``, a ``time.monotonic`` instant, passes first:
    each prefix replays once per probe, and a long sized trace took minutes)."""
    return placed_culprit(subject, profile, capacity, trace, requirement, deadline).requirement


@dataclass(frozen=True)
class Placement:
    """What ``placed_culprit`` found: the requirement to report, the index
    in the trace of the step it blames (None when no step is: the failure's
    own step, or a side effect of ``get``), and why, when a second look
    (``Diagnosis.reconsider``) moved the blame ('' otherwise)."""

    requirement: str
    step: int | None = None
    note: str = ""


def placed_culprit(
    subject: Subject, profile: Profile, capacity: int, trace: Sequence[Action], requirement: str,
    deadline: float | None = None,
) -> Placement:
    """``culprit``, with the step it blames."""
    refinement = profile.refinement
    if refinement is None or requirement not in (
        refinement.order_requirement,
        refinement.liveness_requirement,
    ):
        return Placement(requirement)
    if failure_of(subject, profile, capacity, trace, observe=False) is None:
        return Placement(refinement.culprit("get"))
    if _batch_alone(subject, profile, capacity, trace):
        return Placement(requirement)  # wrong victims or a refusal, of evict's own
    diagnosis = refinement.diagnosis() or _WholeOrder(refinement)

    def measure(prefix: Sequence[Action]) -> list[ProbeResult] | None:
        probed = _probed(subject, profile, capacity, diagnosis, prefix)
        return None if probed is None else probed[1]

    # The fresh policy is probed too: a difference it shows already, before
    # any operation of the trace, is no operation's doing.
    previous = measure(())
    assert previous is not None, "a fresh policy runs no call"
    before = Lockstep(subject, profile, capacity, observe=False)
    ext, state = before.ext, before.state.copy()
    for end in range(1, len(trace)):
        if deadline is not None and time.monotonic() > deadline:
            return Placement(requirement)
        prefix = trace[:end]
        probed = _probed(subject, profile, capacity, diagnosis, prefix)
        if probed is None:
            return Placement(requirement)
        harness, results = probed
        blamed = diagnosis.blame(prefix[:-1], prefix[-1], ext, state, results, previous)
        if blamed is not None and not subject.has("mark") and _LAST_CALL.get(
                prefix[-1][0]) in _MARKS:
            # A policy without marks was not called there (a store completing
            # only writes ref_cnt): no mark can be to blame, the search goes on.
            blamed = None
        if blamed is not None:
            second, note = _reconsidered(diagnosis, blamed, prefix, capacity, measure)
            if second == blamed:
                return Placement(blamed, end - 1, note)
            return Placement(second, _last_step(prefix, refinement, second), note)
        previous = results
        ext, state = harness.ext, harness.state.copy()
    return Placement(requirement)


def _reconsidered(
    diagnosis: Diagnosis, blamed: str, prefix: Sequence[Action], capacity: int,
    measure: Measure,
) -> tuple[str, str]:
    """``diagnosis.reconsider``; a diagnosis written before it existed (an
    out-of-tree profile's) keeps its blame."""
    second_look = getattr(diagnosis, "reconsider", None)
    if second_look is None:
        return blamed, ""
    found: tuple[str, str] = second_look(blamed, prefix, capacity, measure)
    return found


def _probed(
    subject: Subject, profile: Profile, capacity: int, diagnosis: Diagnosis,
    prefix: Sequence[Action],
) -> tuple[Lockstep, list[ProbeResult]] | None:
    """The harness that ran ``prefix`` on a fresh policy and the diagnosis's
    probes after it (the last on that harness, the others each on a replay
    of their own); None when the prefix itself fails."""
    harness = replayed(subject, profile, capacity, prefix)
    if harness is None:
        return None
    probes = list(diagnosis.probes(harness.ext, harness.state))
    results = []
    for index, probe in enumerate(probes):
        fresh = harness if index == len(probes) - 1 else None
        results.append(run_probe(subject, profile, capacity, prefix, probe, harness=fresh))
    return harness, results


def _last_step(prefix: Sequence[Action], refinement: Refinement, requirement: str) -> int | None:
    """The last step of ``prefix`` whose call ``requirement`` is about (None
    for the order requirement: the failing evict's own)."""
    if requirement == refinement.order_requirement:
        return None
    for index in range(len(prefix) - 1, -1, -1):
        if _culprit_of(prefix[index], refinement.culprit) == requirement:
            return index
    return None


def _batch_alone(
    subject: Subject, profile: Profile, capacity: int, trace: Sequence[Action]
) -> bool:
    """Whether the failing ``evict(n, P)`` that ends ``trace`` is wrong as a
    batch only: the same state evicted one key at a time (n calls of
    ``evict(1, P)``) gives the victims the refinement asks of the batch.
    The spec's batch is its singles (each victim is chosen on what the
    ones before it left), so a batch that differs is evict's own fault and
    no earlier operation's, however the probes of a batch read the state."""
    action = trace[-1] if trace else None
    if action is None or action[0] != "evict" or action[1] < 2:
        return False
    n, protected = action[1], action[2]
    harness = replayed(subject, profile, capacity, trace[:-1])
    if harness is None:
        return False
    expected = harness.model.step(("evict", n, protected)).expected
    if not isinstance(expected, list):
        return False
    taken: list[int] = []
    try:
        for _ in range(n):  # each single is judged against the model as it goes
            got = harness.apply(("evict", 1, protected))
            victims = None if got is None else _model_keys(harness, got)
            if victims is None:
                return False
            taken.extend(victims)
    except (ConformanceFailure, Aborted, CallerContractError):
        return False
    return taken == expected


def run_probe(
    subject: Subject, profile: Profile, capacity: int, prefix: Sequence[Action], probe: Probe,
    *, harness: Lockstep | None = None,
) -> ProbeResult:
    """Replay ``prefix`` on a fresh policy (or take ``harness``, which ran
    it and is spent afterwards), run the probe's setup, then its evict on
    the policy and on the refinement."""
    refinement = profile.refinement
    assert refinement is not None
    harness = harness or replayed(subject, profile, capacity, prefix)
    assert harness is not None, "the prefix replayed once already"
    try:
        harness.run(probe.setup_for(subject.has("touch")))
    except (ConformanceFailure, Aborted):
        return ProbeResult(probe, None, None, harness.ext, harness.state, broken=True)
    expected = harness.model.step(("evict", probe.n, probe.protected)).expected
    assert expected is None or isinstance(expected, list)
    try:
        with active(harness.environment):
            got = harness.policy.evict(probe.n, {harness.key(k) for k in probe.protected})
    except Exception:
        return ProbeResult(probe, None, expected, harness.ext, harness.state, broken=True)
    if got is None:
        return ProbeResult(probe, None, expected, harness.ext, harness.state)
    victims = _model_keys(harness, got)
    broken = victims is None
    return ProbeResult(probe, victims, expected, harness.ext, harness.state, broken=broken)


def _model_keys(harness: Lockstep, got: object) -> list[int] | None:
    """The victims in model keys, or None when ``got`` is not a list of
    (key, block) pairs of keys handed out."""
    if not isinstance(got, list):
        return None
    keys: list[int] = []
    for item in got:
        key = harness.model_key(item[0]) if isinstance(item, tuple) and len(item) == 2 else None
        if key is None:
            return None
        keys.append(key)
    return keys


class _WholeOrder:
    """The diagnosis of a refinement that has none: the whole eviction
    order, read as sets. Probe i evicts i keys on its own replay, so key i
    of the policy's order is what evict(i) takes beyond evict(i - 1). Sets,
    not the returned list, and one evict per replay: a policy whose evict
    itself misorders its result (or reorders the rest) must not make an
    earlier operation look guilty. The first prefix whose order differs
    names its last operation."""

    def __init__(self, refinement: Refinement) -> None:
        self.refinement = refinement

    def probes(self, ext: Any, state: State) -> list[Probe]:
        count = len(eligible(state, ()))
        return [Probe(f"first {i}", (), i) for i in range(1, count + 1)]

    def blame(
        self, history: Sequence[Action], action: Action, ext: Any, state: State,
        results: Sequence[ProbeResult], previous: Sequence[ProbeResult],
    ) -> str | None:
        if not any(_as_set(r.got) != _as_set(r.expected) or r.broken for r in results):
            return None
        if _LAST_CALL.get(action[0], action[0]) == "mark_evictable" and results:
            # The full probe evicts every eligible key: if the key just
            # marked is not among them, the mark did not make it eligible.
            whole = results[-1]
            if not whole.broken and action[1] not in (whole.got or ()):
                return "MARK-EVICTABLE-ELIGIBLE"
        return _culprit_of(action, self.refinement.culprit)

    def reconsider(
        self, blamed: str, prefix: Sequence[Action], capacity: int | None,
        measure: Measure,
    ) -> tuple[str, str]:
        return blamed, ""  # the order is all of its state: nothing else to look at


def _as_set(victims: Sequence[int] | None) -> frozenset[int] | None:
    return None if victims is None else frozenset(victims)


# The policy call an action ends with (end_read ends with mark_evictable
# when the last reader leaves, the only case that can move the order).
_LAST_CALL: dict[str, str] = {
    "insert": "insert",
    "finish_store": "mark_evictable",
    "end_read": "mark_evictable",
    "start_read": "mark_non_evictable",
    "remove": "remove",
    "touch": "touch",
    "evict": "evict",
    "clear": "clear",
    "get": "get",
}


_MARKS = frozenset({"mark_evictable", "mark_non_evictable"})


def _culprit_of(action: Action, name_for: Callable[[str], str]) -> str:
    op: str = action[0]
    return name_for(_LAST_CALL.get(op, op))  # a request call is its own call
