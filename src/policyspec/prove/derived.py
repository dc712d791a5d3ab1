"""The derived abstraction pair: any policy's state reached and read through
its public methods only, so that ``prove`` needs nothing from its author.

Concretization (``construction``): a canonical model pre-state
(policyspec.prove.canonical) is built by the calls vLLM's manager makes:
every key inserted in flight, in key order (the idle keys first, in
eviction order); the keys being read complete their stores and start their
loads; then the idle keys' stores complete, in eviction order. Before that,
when the pre-state says the absent key has a past (``past_life``), it is
stored and evicted while it is the only key. Insert order
and mark order are both the model's order, so a policy ranked by either (the
seed LRU by marks; vLLM 0.33's LRU, FIFO and ARC's T1 by inserts) holds the
order the canonical names say, and the profile's model, driven through the
same calls in lockstep (policyspec.harness.Lockstep), holds the same state.

Abstraction, by observation only (``probes``): after the call, the harness
asks ``get`` for every key named so far (presence and identity) and the
probes ask it for the keys the pre-state left absent; then, each on a deep
copy of the harness (policyspec.harness.snapshot.fork), evictions: every key
the model holds eligible at once and one more, which must be refused
(eligibility, and under an exact profile the whole order), and the probes
the exact profile's diagnosis asks for (keys in flight or being read, ARC's
lists). The harness judges every answer against the profile's model as
``check`` does, so a fault is a ``ConformanceFailure`` whose trace runs from
a fresh policy: the minimiser and the reports take it as any finding.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from policyspec.harness import Aborted, ConformanceFailure, Lockstep
from policyspec.harness.snapshot import fork
from policyspec.model.actions import Action
from policyspec.model.evict import eligible
from policyspec.model.state import IDLE, IN_FLIGHT, State
from policyspec.model.step import ProfileModel
from policyspec.prove.commute import ProofSubject

__all__ = [
    "REQUEST",
    "call_actions",
    "construction",
    "derived_failure",
    "past_life",
    "probes",
]

REQUEST = 0
"""The request (model number) a hook, or an R9 insert, comes from: a fresh
one, which has seen and missed nothing yet."""


def construction(state: State, pending: int | None = None) -> list[Action]:
    """The manager's calls that bring a fresh policy to ``state`` (quiescent;
    ``pending`` is a key at ref_cnt 0 not yet marked, reached here as a key
    being read whose load ends with the call under check)."""
    actions: list[Action] = [("insert", key, IN_FLIGHT) for key in sorted(state.refs)]
    for key in sorted(state.refs):
        ref = 1 if key == pending else state.refs[key]
        if ref > IDLE:
            actions.append(("finish_store", key))
            actions.extend(("start_read", key) for _ in range(ref))
    actions.extend(("finish_store", key) for key in state.idle)
    return actions


def past_life(state: State) -> list[Action]:
    """The calls that give the canonical absent key a past before
    ``construction`` (policyspec.prove.canonical, ``past``): stored, then
    evicted while it is the only key."""
    key = len(state.refs)
    return [("insert", key, IN_FLIGHT), ("finish_store", key), ("evict", 1, frozenset())]


def call_actions(op: str, args: Sequence[Any], requests: bool) -> list[Action]:
    """The caller actions that make the call ``op(*args)`` (model arguments,
    policyspec.prove.canonical.decode). ``mark_evictable`` is the end of a
    load, ``mark_non_evictable`` the start of one, as the manager calls
    them; with ``requests`` (a policy with the request hooks) an insert
    carries the storing request, and a hook whose ``placed`` is true comes
    after the scheduler placed its keys, head first (positions 1, 2, ...)."""
    if op == "mark_evictable":
        return [("end_read", args[0])]
    if op == "mark_non_evictable":
        return [("start_read", args[0])]
    if op == "touch":
        return [("touch", tuple(args[0]))]
    if op == "evict":
        return [("evict", args[0], frozenset(args[1]))]
    if op == "insert":
        return [("insert", args[0], args[1], REQUEST) if requests else ("insert", *args)]
    if op in ("on_store_miss", "on_request_access", "on_request_finished"):
        keys = tuple(args[0])
        placed: list[Action] = []
        if args[-1]:
            placed = [("set_positions", REQUEST, tuple((k, i + 1) for i, k in enumerate(keys)))]
        if op == "on_request_finished":
            return [*placed, (op, REQUEST, (keys,), frozenset(args[1]), frozenset(args[2]))]
        return [*placed, (op, REQUEST, keys)]
    return [(op, *args)]


def probes(model: ProfileModel, universe: int, touch: bool) -> list[tuple[Action, ...]]:
    """What reads the state back after the call, each on its own copy: get
    of every key of ``range(universe)`` the model holds absent, an eviction
    of every key it holds eligible and one more eviction, which must be
    refused; then the probes the exact profile's diagnosis asks for, made
    with the calls of the policy's revision (``touch``: it has one)."""
    state = model.state
    absent = tuple(("get", key) for key in range(universe) if key not in state.refs)
    count = len(eligible(state, ()))
    evictions: tuple[Action, ...] = (("evict", count, frozenset()),) if count else ()
    found = [(*absent, *evictions, ("evict", 1, frozenset()))]
    diagnosis = model.refinement.diagnosis() if model.refinement is not None else None
    if diagnosis is not None:
        for probe in diagnosis.probes(model.ext, state):
            found.append((*probe.setup_for(touch), ("evict", probe.n, probe.protected)))
    return found


def _harness(target: ProofSubject, capacity: int) -> Lockstep:
    """The harness as ``check`` builds it (with the request hooks, every
    other action from a second thread, as 0.33's manager calls)."""
    fatal: Callable[[str], bool] | None = (lambda rid: True) if target.strict else None
    return Lockstep(target.subject, target.profile, capacity, fatal=fatal)


def _run(harness: Lockstep, actions: Sequence[Action]) -> ConformanceFailure | None:
    try:
        harness.run(actions)
    except ConformanceFailure as failure:
        return failure
    except Aborted as aborted:
        return aborted.failure
    return None


def derived_failure(
    target: ProofSubject, op: str, state: State, args: Sequence[Any], past: bool = False
) -> ConformanceFailure | None:
    """The first failure of ``op(*args)`` from ``state`` through the derived
    pair, or None: build the state (after the absent key's ``past_life``
    when ``past``), make the call, read the state back. A failure while
    building counts too (the policy cannot hold the state). A policy that
    refuses the past life's eviction (a SHOULD under core) cannot reach the
    state at all: None."""
    capacity = state.capacity if state.capacity is not None else len(state.refs) + 1
    pending = args[0] if op == "mark_evictable" else None
    harness = _harness(target, capacity)
    before = past_life(state) if past else []
    failure = _run(harness, before)
    if failure is not None or len(state.refs) in harness.state.refs:
        return failure
    calls = [*before, *construction(state, pending),
             *call_actions(op, args, target.subject.has("hooks"))]
    failure = _run(harness, calls[len(before):])
    if failure is not None:
        return failure
    for probe in probes(harness.model, len(state.refs) + 1, target.subject.has("touch")):
        try:
            copy = fork(harness)
        except Exception:  # a policy deepcopy cannot copy: build it again
            copy = _harness(target, capacity)
            copy.run(calls)
        failure = _run(copy, probe)
        if failure is not None:
            return failure
    return None
