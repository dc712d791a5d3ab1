"""The derived abstraction pair: any policy's state built and read back
through its public methods only, so that ``prove`` needs nothing from the
policy's author (spec/prove.md, "The derived pair"). The pre-state is built
by the calls vLLM's manager makes, read back by ``get`` and evictions judged
by the harness, and a few calls are judged again with long or odd
arguments that canonical calls cannot express.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from policyspec.harness import Aborted, ConformanceFailure, Lockstep
from policyspec.harness.shapes import keys_shape
from policyspec.harness.snapshot import fork
from policyspec.model.actions import Action
from policyspec.model.evict import eligible
from policyspec.model.state import IDLE, IN_FLIGHT, State
from policyspec.model.step import ProfileModel
from policyspec.prove.commute import ProofSubject

__all__ = [
    "LONG_PROTECTED",
    "LONG_TOUCH",
    "NEVER_STORED",
    "REQUEST",
    "STORE",
    "VARIANTS",
    "call_actions",
    "call_failure",
    "construction",
    "derived_failure",
    "past_life",
    "probes",
    "variants",
]

REQUEST = 0
"""The request (model number) a hook, or an R9 insert, comes from: a fresh
one, which has seen and missed nothing yet."""

NEVER_STORED = 10_000
"""The first model key of the keys a variant adds: far above the canonical
keys (policyspec.prove.canonical.MAX_KEYS), never stored."""
LONG_PROTECTED = 4_097
"""Keys never stored a variant adds to ``protected``: past the sizes
implementations cut at up to 4,096 (1,000, 1,024, 4,096: the size engine's
``LADDER``), so that, in any hash order, a present key is likely to sit
past such a cut."""
STORE = 64
"""Keys never stored a variant protects in an eviction that protects no
present key: the manager protects the keys it is about to store, and a
store of 64 blocks (32,768 tokens of 512) is an ordinary one."""
LONG_TOUCH = 1_025
"""Keys never stored a variant touches first: past 256, 512, 1,000 and
1,024, where bulk paths start."""
VARIANTS = {
    "evict": f"and for n = 1, the same with {LONG_PROTECTED:,} keys never stored added when "
             f"every present key is protected, with {STORE} when none is",
    "touch": f"and a list of one key, the same after {LONG_TOUCH:,} keys never stored",
    "on_store_miss": "and the same with one key never stored added, so that the keys come as "
                     "a generator",
    "on_request_access": "and the same with one key never stored added, so that the keys come "
                         "as a generator",
}
"""The variants of each operation (spec/prove.md, "Variants"), in the words of the
report's bounds."""


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


def _never(count: int) -> tuple[int, ...]:
    return tuple(range(NEVER_STORED, NEVER_STORED + count))


def _as_generator(op: str, keys: tuple[int, ...]) -> tuple[int, ...]:
    """``keys`` and one key never stored after them, the first for which
    the harness passes the keys as a generator (shapes depend on the keys
    only, so this is the same on every run)."""
    extra = NEVER_STORED
    while keys_shape(op, (*keys, extra)) != "generator":
        extra += 1
    return (*keys, extra)


def variants(op: str, state: State, args: Sequence[Any]) -> list[tuple[Any, ...]]:
    """The other arguments ``op`` is also judged with from ``state``
    (spec/prove.md, "Variants", ``VARIANTS``)."""
    if op == "evict" and args[0] == 1 and state.refs:
        protected = frozenset(args[1])
        if set(state.refs) <= protected:
            return [(1, protected | frozenset(_never(LONG_PROTECTED)))]
        if not protected & set(state.refs):
            return [(1, protected | frozenset(_never(STORE)))]
    if op == "touch" and len(args[0]) == 1:
        return [((*_never(LONG_TOUCH), *args[0]),)]
    if op in ("on_store_miss", "on_request_access"):
        return [(_as_generator(op, tuple(args[0])), *args[1:])]
    return []


def derived_failure(
    target: ProofSubject, op: str, state: State, args: Sequence[Any], past: bool = False
) -> ConformanceFailure | None:
    """The first failure of ``op(*args)`` from ``state`` through the derived
    pair, or of one of its ``variants``, or None: build the state (after the
    absent key's ``past_life`` when ``past``), make the call, read the state
    back. A failure while building counts too (the policy cannot hold the
    state). A policy that refuses the past life's eviction (a SHOULD under
    core) cannot reach the state at all: None."""
    for call in (tuple(args), *variants(op, state, args)):
        failure = call_failure(target, op, state, call, past)
        if failure is not None:
            return failure
    return None


def call_failure(
    target: ProofSubject, op: str, state: State, args: Sequence[Any], past: bool
) -> ConformanceFailure | None:
    """``derived_failure`` of one call, without its variants."""
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
