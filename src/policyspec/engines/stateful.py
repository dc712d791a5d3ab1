"""The policy-level Hypothesis state machine.

One machine class per (subject, profile), made by ``policy_machine``; each
rule is a caller action whose arguments are drawn only from what the model's
preconditions allow, so every run stays inside the caller contract. The
harness checks the policy after every call; ``note()`` lines make a shrunk
failure read as a story. Bulk stores let runs reach 40+ keys quickly.
"""

from __future__ import annotations

import gc
import math
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar

from hypothesis import HealthCheck, Phase, Verbosity, note, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.database import ExampleDatabase
from hypothesis.internal.conjecture import engine as conjecture_engine
from hypothesis.stateful import (
    RuleBasedStateMachine,
    get_state_machine_test,
    precondition,
    rule,
)

from policyspec.engines.render import describe
from policyspec.engines.result import EngineRun, Finding
from policyspec.harness import Aborted, ConformanceFailure, Lockstep
from policyspec.harness.sightings import current as current_sightings
from policyspec.model.actions import Action
from policyspec.model.request import group_of
from policyspec.model.state import IDLE, IN_FLIGHT
from policyspec.profiles import Profile
from policyspec.registry import load_registry
from policyspec.subject import Subject

__all__ = [
    "CheckedMachine",
    "MachineStats",
    "PolicyMachine",
    "end_example",
    "policy_machine",
    "run_machine",
    "run_stateful",
]

GC_EVERY = 8
"""Examples between two full garbage collections (``_collect_garbage``)."""


def end_example(stats: MachineStats, harness: Lockstep) -> None:
    """What a machine's teardown does (this one and the manager's): add the
    example's counts and soft failures to ``stats``, and collect garbage."""
    stats.calls += harness.calls
    harness.sightings.calls += harness.calls
    stats.checked.update(harness.checked)
    for failure in harness.soft:
        if all(f.requirement != failure.requirement for f in stats.soft):
            stats.soft.append(failure)
    _collect_garbage(stats)


def _collect_garbage(stats: MachineStats) -> None:
    """A full collection every GC_EVERY examples. Each example leaves some
    thousands of objects in reference cycles (Hypothesis's choice nodes,
    closures and strategies) that outlive the young generations, and
    Python collects the oldest one rarely. With this, chunks of at most 10
    examples and no strategy cached per key list, a ``check`` ten times
    longer peaks at the same memory (benchmarks/results.txt, memory)."""
    if stats.examples % GC_EVERY == 0:
        gc.collect()


@dataclass
class MachineStats:
    """Counts shared by all instances of one machine class."""

    checked: Counter[str] = field(default_factory=Counter)
    calls: int = 0
    steps: int = 0
    examples: int = 0
    soft: list[ConformanceFailure] = field(default_factory=list)


class CheckedMachine(RuleBasedStateMachine):
    """A state machine ``run_machine`` can run: its class counts examples,
    calls and checks in ``stats`` (the policy machine and the manager's)."""

    stats: ClassVar[MachineStats]


class PolicyMachine(CheckedMachine):
    """Drives one policy through caller actions at the policy API level."""

    subject: ClassVar[Subject]
    profile: ClassVar[Profile]
    capacity: ClassVar[int] = 64
    pool: ClassVar[int] = 48
    """Keys are drawn from 0..pool-1 (plus a few never inserted)."""
    stats: ClassVar[MachineStats]

    def __init__(self) -> None:
        super().__init__()
        self.h = Lockstep(self.subject, self.profile, self.capacity)
        self.stats.examples += 1
        self.inserted: set[int] = set()
        """Keys inserted so far (for touch: see ``_departed``)."""
        self.visits: dict[int, _Visit] = {}
        """The request level: what each request did in this generation."""

    def _do(self, action: Action) -> None:
        note(describe(action))
        self.stats.steps += 1
        if action[0] == "insert":
            self.inserted.add(action[1])
        self.h.apply(action)

    def teardown(self) -> None:
        end_example(self.stats, self.h)

    # -- helpers ----------------------------------------------------------

    def _absent(self) -> list[int]:
        refs = self.h.state.refs
        return [k for k in range(self.pool) if k not in refs]

    def _with_ref(self, test: Callable[[int], bool]) -> list[int]:
        return sorted(k for k, r in self.h.state.refs.items() if test(r))

    def _departed(self) -> list[int]:
        """Keys that were present and are not now (evicted, removed,
        cleared). Touching them is caller-legal like any absent key, and
        it is what reaches a refinement's memory of departed keys: ARC's
        ghosts, bounded by the capacity, adapt the target when touched."""
        refs = self.h.state.refs
        return sorted(k for k in self.inserted if k not in refs)

    def _room(self) -> bool:
        return len(self.h.state.refs) < min(self.pool, self.capacity)

    # -- rules --------------------------------------------------------------

    @precondition(lambda self: self._room())
    @rule(data=st.data(), ready=st.booleans())
    def store(self, data: st.DataObject, ready: bool) -> None:
        """The manager stores a new block (in flight); the policy API also
        allows inserting an idle block."""
        key = _pick(data, self._absent(), "key")
        self._do(("insert", key, IDLE if ready else IN_FLIGHT))

    @precondition(lambda self: self._room())
    @rule(data=st.data())
    def store_many(self, data: st.DataObject) -> None:
        """A request stores a run of blocks and most of them complete."""
        room = min(self.pool, self.capacity) - len(self.h.state.refs)
        count = data.draw(st.integers(1, min(room, 24)), label="count")
        keys = self._absent()[:count]
        done = data.draw(st.integers(0, len(keys)), label="completed")
        for key in keys:
            self._do(("insert", key, IN_FLIGHT))
        for key in keys[:done]:
            self._do(("finish_store", key))

    @precondition(lambda self: any(r == IN_FLIGHT for r in self.h.state.refs.values()))
    @rule(data=st.data())
    def finish_store(self, data: st.DataObject) -> None:
        key = _pick(data, self._with_ref(lambda r: r == IN_FLIGHT), "key")
        self._do(("finish_store", key))

    @precondition(lambda self: bool(self.h.state.refs))
    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        """A failed store removes an in-flight key; the policy API allows
        removing a key in any state."""
        key = _pick(data, sorted(self.h.state.refs), "key")
        self._do(("remove", key))

    @precondition(lambda self: any(r >= IDLE for r in self.h.state.refs.values()))
    @rule(data=st.data())
    def start_read(self, data: st.DataObject) -> None:
        key = _pick(data, self._with_ref(lambda r: r >= IDLE), "key")
        self._do(("start_read", key))

    @precondition(lambda self: any(r > IDLE for r in self.h.state.refs.values()))
    @rule(data=st.data())
    def end_read(self, data: st.DataObject) -> None:
        key = _pick(data, self._with_ref(lambda r: r > IDLE), "key")
        self._do(("end_read", key))

    @rule(data=st.data())
    def touch(self, data: st.DataObject) -> None:
        """Any keys: present in any state, absent, repeated, or none.
        Absent keys that were present before get their own share (see
        ``_departed``): uniform draws from the pool rarely name them."""
        universe = st.integers(0, self.pool + 3)
        present = sorted(self.h.state.refs)
        departed = self._departed()
        choice = _one_of(present) | universe if present else universe
        if departed:
            choice = choice | _one_of(departed)
        keys = _draw_many(data, choice, 8, "keys")
        self._do(("touch", keys))

    @rule(data=st.data())
    def evict(self, data: st.DataObject) -> None:
        idle = self.h.state.idle
        n = data.draw(st.integers(0, len(idle) + 1), label="n")
        candidates = st.integers(0, self.pool + 3)
        if idle:
            candidates = _one_of(sorted(idle)) | candidates
        protected = frozenset(_draw_many(data, candidates, 6, "protected"))
        self._do(("evict", n, protected))

    @rule(data=st.data())
    def get(self, data: st.DataObject) -> None:
        key = data.draw(st.integers(0, self.pool + 3), label="key")
        self._do(("get", key))

    @precondition(lambda self: self.subject.has("clear") and len(self.h.state.refs) > 0)
    @rule(data=st.data())
    def clear(self, data: st.DataObject) -> None:
        """Rare on purpose (1 in 8 when chosen): clears keep states small.
        With request hooks 1 in 4: what a reset does to requests still
        running (LRU033-CLEAR-RESET) shows only in the requests after it."""
        odds = 3 if self.subject.has("hooks") else 7
        if data.draw(st.integers(0, odds), label="clear?") == 0:
            self._do(("clear",))
            self.visits.clear()

    # -- the request level (spec/request.md), where the revision has hooks ------

    def _visit(self, r: int) -> _Visit:
        """What this caller remembers of request ``r`` in this generation."""
        return self.visits.setdefault(r, _Visit())

    @precondition(lambda self: self.subject.has("hooks") and bool(self._absent()))
    @rule(data=st.data())
    def request_stores(self, data: st.DataObject) -> None:
        """A request stores a run of blocks as 0.33's prepare_store does:
        its positions are placed (some keys get none), the new misses are
        reported, the first-seen keys accessed; when the cache lacks room,
        evict makes it with the request's keys protected (the store is
        refused without inserts when there are too few idle blocks or evict
        refuses); then the inserts carry the request's context. The misses
        come before the eviction, so a hook sees a full cache."""
        r = data.draw(st.integers(0, REQUESTS - 1), label="request")
        visit = self._visit(r)
        if visit.finished:
            return
        absent = self._absent()
        keys = absent[: data.draw(st.integers(1, min(len(absent), 12)), label="count")]
        placed = tuple((k, 16 * (k + 1)) for k in keys if k % 5)
        if placed:
            self._do(("set_positions", r, placed))
        misses = tuple(k for k in keys if k not in visit.missed)
        if misses:
            self._do(("on_store_miss", r, misses))
            visit.missed.update(misses)
        self._see(r, keys)
        need = len(self.h.state.refs) + len(keys) - self.capacity
        if need > 0:
            if need > len(self.h.state.idle):
                return  # the manager refuses before it asks the policy
            self._do(("evict", need, frozenset(keys)))
            if len(self.h.state.refs) + len(keys) > self.capacity:
                return  # evict refused: so does prepare_store
        for k in keys:
            self._do(("insert", k, IN_FLIGHT, r))
            visit.inserted.add(k)

    @precondition(lambda self: self.subject.has("hooks") and bool(self.h.state.refs))
    @rule(data=st.data())
    def request_reads(self, data: st.DataObject) -> None:
        """A request sees resident keys (a load, or a store of keys already
        there): first-seen ones are accessed; ready ones count as reused."""
        r = data.draw(st.integers(0, REQUESTS - 1), label="request")
        if self._visit(r).finished:
            return
        present = sorted(self.h.state.refs)
        keys = _draw_many(data, _one_of(present), 8, "keys")
        fresh = tuple(dict.fromkeys(keys))
        placed = self.h.model.requests.get(r).positions
        unplaced = tuple((k, 16 * (k + 1)) for k in fresh if k % 5 and k not in placed)
        if unplaced:  # the scheduler places every key of its request
            self._do(("set_positions", r, unplaced))
        self._see(r, fresh)
        ready = [k for k in fresh if self.h.state.refs.get(k, IN_FLIGHT) >= IDLE]
        self._visit(r).reused.update(k for k in ready if k not in self._visit(r).inserted)

    @precondition(lambda self: self.subject.has("hooks") and bool(self.visits))
    @rule(data=st.data())
    def request_finishes(self, data: st.DataObject) -> None:
        """on_request_finished, once per request and generation, with the
        keys it saw by group (head to tail when every key has a position),
        those it only inserted and those it reused."""
        open_ = sorted(r for r, v in self.visits.items() if not v.finished)
        if not open_:
            return
        r = _pick(data, open_, "request")
        visit = self.visits[r]
        positions = self.h.model.requests.get(r).positions
        groups: dict[int, list[int]] = {}
        for k in visit.seen:
            groups.setdefault(group_of(k), []).append(k)
        ordered = tuple(
            tuple(sorted(g, key=positions.__getitem__) if all(k in positions for k in g) else g)
            for _, g in sorted(groups.items())
        )
        self._do(("on_request_finished", r, ordered,
                  frozenset(visit.inserted - visit.reused), frozenset(visit.reused)))
        visit.finished = True

    def _see(self, r: int, keys: Sequence[int]) -> None:
        visit = self._visit(r)
        new = tuple(k for k in keys if k not in visit.seen)
        if new:
            self._do(("on_request_access", r, new))
            visit.seen.extend(new)


REQUESTS = 4
"""Requests the policy machine opens (ids 0..REQUESTS-1, reused after a clear)."""


@dataclass
class _Visit:
    """One request in one cache generation, as 0.33's manager records it."""

    seen: list[int] = field(default_factory=list)
    missed: set[int] = field(default_factory=set)
    inserted: set[int] = field(default_factory=set)
    reused: set[int] = field(default_factory=set)
    finished: bool = False


# Strategies built from the current keys are never passed to a strategy
# function (st.sampled_from, st.lists, st.frozensets): Hypothesis caches the
# strategy those return for every distinct argument (up to 1,024 entries,
# each holding its key list), so a long run kept ever more of them alive.
# Integer ranges repeat, and ``map`` and ``|`` are not cached.


def _one_of(keys: list[int]) -> st.SearchStrategy[int]:
    """One of ``keys``, drawn as an index."""
    return st.integers(0, len(keys) - 1).map(keys.__getitem__)


def _draw_many(
    data: st.DataObject, element: st.SearchStrategy[int], most: int, label: str
) -> tuple[int, ...]:
    """Up to ``most`` draws of ``element`` (repeats allowed)."""
    count = data.draw(st.integers(0, most), label=f"{label}: how many")
    return tuple(data.draw(element, label=label) for _ in range(count))


def _pick(data: st.DataObject, keys: list[int], label: str) -> int:
    key: int = data.draw(_one_of(keys), label=label)
    return key


def policy_machine(
    subject: Subject, profile: Profile, *, capacity: int = 64, pool: int = 48,
    base: type[PolicyMachine] = PolicyMachine,
) -> type[PolicyMachine]:
    """A machine class bound to one subject and profile."""
    attrs: dict[str, Any] = {
        "subject": subject,
        "profile": profile,
        "capacity": capacity,
        "pool": pool,
        "stats": MachineStats(),
    }
    return type(f"{base.__name__}For_{profile.name}", (base,), attrs)


SMALL_CAPACITY = 16
"""The capacity the policy machine first runs at when none is fixed: its
key pool (48) is three times that, so the cache is often full (a store
miss, an insert that needs an evict first, evictions that must pick among
many idle keys), and what breaks there shrinks to witnesses a few steps
long. The larger default capacity gets the rest of the time; the size
engine goes further."""


def run_stateful(
    subject: Subject, profile: Profile, seconds: float, seed: int, capacity: int, *,
    database: ExampleDatabase | None = None, fixed: bool = False,
) -> EngineRun:
    """The stateful engine: half its time at SMALL_CAPACITY (unless the
    capacity is fixed, or not larger), the rest at ``capacity`` unless the
    first half found something. Findings at the small capacity say so
    (``Finding.capacity``), so that their witness and repro run there."""
    if fixed or capacity <= SMALL_CAPACITY:
        return run_machine(policy_machine(subject, profile, capacity=capacity),
                           engine="stateful", seed=seed, seconds=seconds, database=database)
    small = run_machine(policy_machine(subject, profile, capacity=SMALL_CAPACITY),
                        engine="stateful", seed=seed, seconds=seconds / 2, database=database)
    for finding in small.findings:
        finding.capacity = SMALL_CAPACITY
    if small.error or any(_must(f.requirement) for f in small.findings):
        return small  # as one run stops at its first failure
    rest = run_machine(policy_machine(subject, profile, capacity=capacity),
                       engine="stateful", seed=seed, seconds=seconds - small.seconds,
                       database=database)
    for finding in small.findings:  # SHOULDs, kept where shorter
        rest.add(finding)
    rest.checked.update(small.checked)
    rest.calls += small.calls
    rest.steps += small.steps
    rest.examples += small.examples
    rest.seconds += small.seconds
    rest.notes[:0] = small.notes
    return rest


def _must(requirement: str) -> bool:
    known = load_registry().get(requirement)
    return known is None or known.level == "MUST"


def run_machine(
    machine: type[CheckedMachine],
    *,
    engine: str,
    seed: int,
    seconds: float,
    steps: int = 60,
    chunk: int = 10,
    database: ExampleDatabase | None = None,
    shrink_seconds: float | None = None,
    keep_cut: bool = False,
) -> EngineRun:
    """Run ``machine`` in chunks of examples until ``seconds`` have passed or
    a failure is found. Chunk i uses seed ``seed * 7919 + i`` and a size from a
    fixed schedule (small first, so a short budget is not overrun, growing to
    ``chunk``): the same seed gives the same examples in the same order, and
    only how many chunks run depends on the clock. Shrinking a failure gets
    ``shrink_seconds`` more at most (default: SHRINK_SHARE of ``seconds``,
    at least MIN_SHRINK_SECONDS; ``_shrinking_for``). A trace whose shrinking was
    probably cut is handed on as not shrunk, for policyspec's minimiser,
    unless ``keep_cut``. Hypothesis keeps every example of a run until the
    run ends, so ``chunk`` also sets the peak memory: small chunks keep it
    flat however long the run (benchmarks/results.txt, memory)."""
    result = EngineRun(engine=engine)
    started = time.monotonic()
    index = 0
    while True:
        test = get_state_machine_test(
            machine,
            settings=settings(
                max_examples=min(chunk, 5 << index),
                stateful_step_count=steps,
                deadline=None,
                database=database,
                derandomize=False,
                suppress_health_check=list(HealthCheck),
                verbosity=Verbosity.quiet,
                report_multiple_bugs=True,
                print_blob=False,
                phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
            ),
        )
        test = hypothesis_seed(seed * 7919 + index)(test)
        index += 1
        shrink_limit = shrink_seconds or max(MIN_SHRINK_SECONDS, seconds * SHRINK_SHARE)
        before = time.monotonic()
        try:
            with _shrinking_for(shrink_limit):
                test()
        except Aborted as aborted:
            _record(result, aborted.failure, engine)
        except ConformanceFailure as failure:
            _record(result, failure, engine,
                    shrunk=keep_cut or _fully(before, shrink_limit + seconds))
        except BaseExceptionGroup as group:
            failures, rest = group.split(ConformanceFailure)
            if rest is not None:
                raise
            if failures is not None:
                shrunk = keep_cut or _fully(before, shrink_limit + seconds)
                for leaf in _leaves(failures):
                    _record(result, leaf, engine, shrunk=shrunk)
        if (result.findings or time.monotonic() - started >= seconds
                or current_sightings().stopped()):
            break
    stats = machine.stats
    for soft in stats.soft:
        _record(result, soft, engine)
    result.checked.update(stats.checked)
    result.calls = stats.calls
    result.steps = stats.steps
    result.examples = stats.examples
    result.seconds = time.monotonic() - started
    return result


MIN_SHRINK_SECONDS = 2.0
SHRINK_SHARE = 0.5
"""Hypothesis's shrinking gets half the engine's own time, and at least
MIN_SHRINK_SECONDS: a safety net for the run's budget (a failing quick run
under 30 s wall: with the second thread of the request hooks, shrinking
one failure took 13 s of a 6 s share). A bound in time makes the trace
depend on the machine's load, so the bound that normally ends shrinking is
SHRINKS, and a trace cut by time goes on to policyspec's own minimiser,
which counts replays."""

SHRINKS = 20
"""Successful shrinks Hypothesis may make of one failure: a count keeps the
result the same for the same seed; policyspec's own minimiser, which runs
after it, takes the trace the rest of the way much more cheaply
(benchmarks/results.txt, detection)."""


@contextmanager
def _shrinking_for(seconds: float) -> Iterator[None]:
    """Bound Hypothesis's shrinking by SHRINKS successful steps and by
    ``seconds`` instead of its own five minutes. Each example of this
    machine asks get of every key after every call, so thousands of shrink
    attempts took a minute where the quick budget promises 20 s. Both
    bounds are module constants of Hypothesis's engine (not public API):
    where they are missing, shrinking is unbounded, as before."""
    saved = getattr(conjecture_engine, "MAX_SHRINKING_SECONDS", None)
    saved_count = getattr(conjecture_engine, "MAX_SHRINKS", None)
    if saved is None or saved_count is None:
        yield
        return
    conjecture_engine.MAX_SHRINKING_SECONDS = math.ceil(seconds)
    conjecture_engine.MAX_SHRINKS = SHRINKS
    try:
        yield
    finally:
        conjecture_engine.MAX_SHRINKING_SECONDS = saved
        conjecture_engine.MAX_SHRINKS = saved_count


def _fully(started: float, bound: float) -> bool:
    """Whether Hypothesis can have finished shrinking: a test call that ran
    longer than ``bound`` (the shrinking bound plus the time generation may
    have taken) was probably cut, and its trace goes through policyspec's
    own (deterministic) minimiser like those of the other engines."""
    return time.monotonic() - started < bound


def _leaves(group: BaseExceptionGroup[ConformanceFailure]) -> list[ConformanceFailure]:
    out: list[ConformanceFailure] = []
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            out.extend(_leaves(exc))
        else:
            out.append(exc)
    return out


def _record(
    result: EngineRun, failure: ConformanceFailure, engine: str, *, shrunk: bool = False
) -> None:
    result.add(Finding(failure.requirement, failure.message, failure.trace, engine, shrunk))
