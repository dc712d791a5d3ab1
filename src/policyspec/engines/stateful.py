"""The policy-level Hypothesis state machine: each rule is a caller action
drawn only from what the model's preconditions allow, so every run stays
inside the caller contract, and Hypothesis shrinks a failure to a short
story. Bulk rules and a capacity drawn per example reach production sizes
(spec/engines.md, spec/sizes.md) while staying ordinary steps of the trace,
so witnesses replay and minimise as any other. Its rules are the model's
named actions: a later release's observation hook is left to the fast,
vllm-manager and trace engines (spec/drift.md).
"""

from __future__ import annotations

import gc
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from hypothesis import HealthCheck, Phase, Verbosity, note, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.database import ExampleDatabase
from hypothesis.stateful import (
    RuleBasedStateMachine,
    get_state_machine_test,
    initialize,
    precondition,
    rule,
)

from policyspec.engines.draws import seed_alone
from policyspec.harness import Aborted, ConformanceFailure, Lockstep
from policyspec.harness.sightings import current as current_sightings
from policyspec.model.actions import Action
from policyspec.model.request import group_of
from policyspec.model.state import IDLE, IN_FLIGHT
from policyspec.profiles import Profile
from policyspec.run.context import Engine, EngineContext, capped
from policyspec.run.result import EngineRun, Finding
from policyspec.sources.clock_steps import CLOCK_STEPS, reads_clock
from policyspec.sources.sizes import CAPACITIES, FILL_MOST, LENGTHS, sizes_up_to
from policyspec.subject import Subject
from policyspec.witness.render import describe

__all__ = [
    "CheckedMachine",
    "ClockedPolicyMachine",
    "MachineStats",
    "PolicyMachine",
    "capacity_choice",
    "drawn_capacities",
    "end_example",
    "policy_machine",
    "run_machine",
    "run_stateful",
    "stamp_capacity",
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
    examples and no strategy cached per key list, a much longer ``check``
    peaks at the same memory (measured: benchmarks/results.txt, memory)."""
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
    capacities: Counter[int] = field(default_factory=Counter)
    """Examples run at each capacity (``CheckedMachine.teardown``)."""

    def count_capacities(self, run: EngineRun, capacity: int, drawn: bool) -> None:
        """The capacities the examples ran at, in ``run.counts``: the
        stateful and the manager engines report them alike (``run_details``
        says them once per engine, and only when sizes were drawn)."""
        if self.capacities:
            run.counts["largest_capacity"] = max(self.capacities)
            if drawn:
                run.counts["large_examples"] = sum(
                    count for size, count in self.capacities.items() if size > capacity)
                run.counts["sized_examples"] = self.capacities.total()


class CheckedMachine(RuleBasedStateMachine):
    """A state machine ``run_machine`` can run: its class counts examples,
    calls and checks in ``stats`` (the policy machine and the manager's).
    Each example drives one harness ``h`` at its own capacity ``cap``:
    ``capacity``, or, when ``drawn`` is not empty, what ``size`` draws."""

    stats: ClassVar[MachineStats]
    capacity: ClassVar[int] = 64
    """The capacity of every example when ``drawn`` is empty, else the
    largest of the small ones."""
    drawn: ClassVar[tuple[int, ...]] = ()
    """The capacities an example draws from (``size``); empty: fixed."""
    cap: int
    h: Lockstep

    def _harness(self) -> Lockstep:
        """A fresh harness at capacity ``cap``."""
        raise NotImplementedError

    def _apply(self, action: Action) -> object:
        """``action`` through the harness; a failure keeps the capacity it
        was found at (``stamp_capacity``)."""
        self.stats.steps += 1
        try:
            return self.h.apply(action)
        except ConformanceFailure as failure:
            stamp_capacity(failure, self.cap)
            raise
        except Aborted as aborted:
            stamp_capacity(aborted.failure, self.cap)
            raise

    @initialize(data=st.data())
    def size(self, data: st.DataObject) -> None:
        """The example's capacity, before any call (``capacity_choice``):
        mostly a small one, one example in LARGE_ONE_IN a large one; the
        draw shrinks to the smallest."""
        if not self.drawn:
            return
        cap = data.draw(capacity_choice(self.drawn, self.capacity), label="capacity")
        if cap != self.cap:
            self.cap = cap
            self.h = self._harness()
        note(f"capacity {cap}")

    def teardown(self) -> None:
        self.stats.capacities[self.cap] += 1
        for failure in self.h.soft:
            stamp_capacity(failure, self.cap)
        end_example(self.stats, self.h)


class PolicyMachine(CheckedMachine):
    """Drives one policy through caller actions at the policy API level."""

    subject: ClassVar[Subject]
    profile: ClassVar[Profile]
    pool: ClassVar[int] = 48
    """Keys are drawn from 0..pool-1 (plus a few never inserted); bulk rules
    add keys from pool + 4 on (``_fresh``)."""
    stats: ClassVar[MachineStats]

    def __init__(self) -> None:
        super().__init__()
        self.cap = self.capacity
        """This example's capacity (``size`` may draw another)."""
        self.h = self._harness()
        self.stats.examples += 1
        self.next_key = self.pool + 4
        """The next key no one has named (bulk fills, pads of long calls)."""
        self.inserted: set[int] = set()
        """Keys inserted so far (for touch: see ``_departed``)."""
        self.visits: dict[int, _Visit] = {}
        """The request level: what each request did in this generation."""

    def _harness(self) -> Lockstep:
        """A fresh harness at this example's capacity. In a large example
        (``_bulk``) it does not ask get of every key after every call: with
        the thousands of keys bulk rules name, that costs more than the rest
        of the example."""
        return Lockstep(self.subject, self.profile, self.cap, observe=not self._bulk())

    def _do(self, action: Action) -> None:
        note(describe(action))
        if action[0] == "insert":
            self.inserted.add(action[1])
        self._apply(action)

    def _bulk(self) -> bool:
        """Whether this example has the bulk rules: a large capacity."""
        return self.cap > self.capacity

    def _fresh(self, count: int) -> list[int]:
        """``count`` keys never named before in this example."""
        start = self.next_key
        self.next_key += count
        return list(range(start, start + count))

    def _length(self, data: st.DataObject, most: int, label: str) -> int:
        """A long call's length: a threshold of ``sizes.LENGTHS`` up to
        ``most``, smallest first."""
        choices = sizes_up_to(LENGTHS, most)
        return choices[data.draw(st.integers(0, len(choices) - 1), label=label)]

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
        return len(self.h.state.refs) < self.cap and bool(self._absent())

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
        room = min(len(self._absent()), self.cap - len(self.h.state.refs))
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

    @precondition(lambda self: self.subject.has("touch"))
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

    # -- bulk rules, in large examples (``_bulk``): sizes.py ------------------

    @precondition(lambda self: self._bulk()
                  and len(self.h.state.refs) < min(self.cap, FILL_MOST))
    @rule(data=st.data())
    def store_bulk(self, data: st.DataObject) -> None:
        """Hundreds to a thousand new keys stored in one step (each insert
        and completion its own step of the trace); the last ``busy`` stay
        in flight."""
        room = min(self.cap, FILL_MOST) - len(self.h.state.refs)
        keys = self._fresh(self._length(data, room, "count"))
        busy = data.draw(st.integers(0, min(3, len(keys))), label="in flight")
        for key in keys:
            self._do(("insert", key, IN_FLIGHT))
        for key in keys[: len(keys) - busy]:
            self._do(("finish_store", key))

    @precondition(lambda self: self._bulk() and self.subject.has("touch"))
    @rule(data=st.data())
    def touch_bulk(self, data: st.DataObject) -> None:
        """A touch of hundreds to thousands of keys: the least recent idle
        keys, or every present key (busy ones included) in a drawn order,
        padded with keys never stored."""
        length = self._length(data, max(LENGTHS), "length")
        if data.draw(st.booleans(), label="every present key?"):
            keys = sorted(self.h.state.refs)
            random.Random(data.draw(st.integers(0, 255), label="order")).shuffle(keys)
        else:
            keys = list(self.h.state.idle)
        keys = keys[:length]
        self._do(("touch", (*keys, *self._fresh(length - len(keys)))))

    @precondition(lambda self: self._bulk() and bool(self.h.state.idle))
    @rule(data=st.data())
    def evict_bulk(self, data: st.DataObject) -> None:
        """An eviction of hundreds to thousands of keys (up to one more than
        are idle), or of a few with a protected set of hundreds to
        thousands: the least recent idle keys, padded with keys never
        stored."""
        idle = list(self.h.state.idle)
        if data.draw(st.booleans(), label="many victims?"):
            n = self._length(data, len(idle) + 1, "n")
            self._do(("evict", n, frozenset()))
            return
        length = self._length(data, max(LENGTHS), "protected")
        guarded = idle[: min(length, len(idle) - 1)]
        n = data.draw(st.integers(1, 3), label="n")
        self._do(("evict", n, frozenset((*guarded, *self._fresh(length - len(guarded))))))

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
        self._offer(r, keys)
        self._store_request(r, keys, keys)

    @precondition(lambda self: self.subject.has("hooks") and self._bulk())
    @rule(data=st.data())
    def request_stores_many(self, data: st.DataObject) -> None:
        """``request_stores`` of a long prompt: thousands of new keys
        offered to the hooks in one call each, the first ones stored (as
        many as fit within FILL_MOST keys)."""
        r = data.draw(st.integers(0, REQUESTS - 1), label="request")
        if self._visit(r).finished:
            return
        keys = self._fresh(self._length(data, max(LENGTHS), "count"))
        room = max(0, min(self.cap, FILL_MOST) - len(self.h.state.refs))
        self._offer(r, keys)
        self._store_request(r, keys, keys[:room])

    def _offer(self, r: int, keys: Sequence[int]) -> None:
        """A store's report to the hooks: the positions placed (some keys
        get none), the new misses, the first-seen keys."""
        visit = self._visit(r)
        placed = tuple((k, 16 * (k + 1)) for k in keys if k % 5)
        if placed:
            self._do(("set_positions", r, placed))
        misses = tuple(k for k in keys if k not in visit.missed)
        if misses:
            self._do(("on_store_miss", r, misses))
            visit.missed.update(misses)
        self._see(r, keys)

    def _store_request(self, r: int, keys: Sequence[int], stored: Sequence[int]) -> None:
        """The end of a request's store (``request_stores``): room made by
        evict with every offered key protected, then the inserts of
        ``stored`` (a prefix of ``keys``: a bulk store keeps the example's
        keys within FILL_MOST)."""
        visit = self._visit(r)
        need = len(self.h.state.refs) + len(stored) - self.cap
        if need > 0:
            if need > len(self.h.state.idle):
                return  # the manager refuses before it asks the policy
            self._do(("evict", need, frozenset(keys)))
            if len(self.h.state.refs) + len(stored) > self.cap:
                return  # evict refused: so does prepare_store
        for k in stored:
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


class ClockedPolicyMachine(PolicyMachine):
    """The policy machine with time passing: for a policy that reads a
    clock (``engines.clock_steps.reads_clock``)."""

    @precondition(lambda self: self.h.environment.read_clock)
    @rule(data=st.data())
    def clock(self, data: st.DataObject) -> None:
        """The clock moves (steady steps first: the draw shrinks to them)."""
        self._do(("clock", data.draw(st.sampled_from(CLOCK_STEPS), label="ms")))


def policy_machine(
    subject: Subject, profile: Profile, *, capacity: int = 64, pool: int = 48,
    base: type[PolicyMachine] = PolicyMachine, drawn: tuple[int, ...] = (),
) -> type[PolicyMachine]:
    """A machine class bound to one subject and profile; ``drawn``: the
    capacities its examples draw from (empty: all at ``capacity``)."""
    attrs: dict[str, Any] = {
        "subject": subject,
        "profile": profile,
        "capacity": capacity,
        "drawn": drawn,
        "pool": pool,
        "stats": MachineStats(),
    }
    return type(f"{base.__name__}For_{profile.name}", (base,), attrs)


SMALL_CAPACITY = 16
"""The smallest capacity an example draws when none is fixed (and what its
draw shrinks to): its key pool (48) is three times that, so the cache is
often full (a store miss, an insert that needs an evict first, evictions
that must pick among many idle keys), and what breaks there shrinks to
witnesses a few steps long. The run's capacity (64) is the other small
one; one example in LARGE_ONE_IN draws a large one (``sizes.CAPACITIES``)."""

LARGE_ONE_IN = 8
"""One example in this many draws a large capacity (``CheckedMachine.size``):
a large example costs tens of small ones (its bulk rules store hundreds of
keys, each checked by the harness after every call)."""


_CHOICES: dict[tuple[tuple[int, ...], int], st.SearchStrategy[int]] = {}


def capacity_choice(drawn: tuple[int, ...], capacity: int) -> st.SearchStrategy[int]:
    """An example's capacity from ``drawn`` (``CheckedMachine.size``): one
    example in LARGE_ONE_IN one of the large ones, else SMALL_CAPACITY or
    ``capacity``; both choices shrink to the smallest. Made once per
    ``drawn`` (a handful: one per run capacity)."""
    key = (drawn, capacity)
    if key not in _CHOICES:
        small = [c for c in (SMALL_CAPACITY, capacity) if c in drawn]
        large = [c for c in drawn if c not in small] or small

        @st.composite
        def choice(draw: st.DrawFn) -> int:
            # The last value is large, so that the draw shrinks to small (0).
            big = draw(st.integers(0, LARGE_ONE_IN - 1)) == LARGE_ONE_IN - 1
            pick = large if big else small
            return pick[draw(st.integers(0, len(pick) - 1))]

        _CHOICES[key] = choice()
    return _CHOICES[key]


def drawn_capacities(capacity: int, fixed: bool) -> tuple[int, ...]:
    """What the examples of a run at ``capacity`` draw from: nothing when
    the capacity is fixed (or not above SMALL_CAPACITY), else the two small
    ones and every larger threshold capacity, smallest first."""
    if fixed or capacity <= SMALL_CAPACITY:
        return ()
    return (SMALL_CAPACITY, capacity, *(c for c in CAPACITIES if c > capacity))


def run_stateful(ctx: EngineContext) -> EngineRun:
    """The stateful engine: RATE examples per work unit (``ctx.examples``),
    until the wall-time cap at most. Unless the capacity is fixed,
    SMALL_SHARE of them small examples only, then each example at a
    capacity of its own (``drawn_capacities``, ``CheckedMachine.size``).
    Findings at another capacity than ``capacity`` say so
    (``Finding.capacity``), so that their witness and repro run there; the
    report's route moves a large one to a smaller capacity
    (``findings.smaller``)."""
    subject, profile, capacity, seed = ctx.subject, ctx.profile, ctx.capacity, ctx.seed
    database, cap = ctx.database, ctx.cap
    planned = ctx.examples(RATE)
    drawn = drawn_capacities(capacity, ctx.capacity_fixed)
    first: EngineRun | None = None
    # The clock rule only for a policy that reads a clock (engines.clock_steps):
    # a rule more changes every draw of the machine.
    base = ClockedPolicyMachine if reads_clock(subject, capacity) else PolicyMachine
    small = min(planned, max(SMALL_LEAST, round(planned * SMALL_SHARE))) if drawn else 0
    if small:
        # Small examples only first, as this engine ran before sizes were
        # drawn: what shows at 16 or 64 blocks is found there as soon (on a
        # busy machine too) and with a witness of a few steps.
        first = run_machine(
            policy_machine(subject, profile, capacity=capacity, drawn=drawn[:2], base=base),
            engine="stateful", seed=seed, examples=small, database=database, cap=cap)
        if first.error or first.findings or first.capped:
            first.planned = planned
            return _counted(first, first, capacity, ())
    machine = policy_machine(subject, profile, capacity=capacity, drawn=drawn, base=base)
    run = run_machine(machine, engine="stateful", seed=seed, examples=planned - small,
                      database=database, cap=cap)
    if first is not None:
        run.checked.update(first.checked)
        run.calls += first.calls
        run.steps += first.steps
        run.examples += first.examples
        run.seconds += first.seconds
    run.planned = planned
    if drawn and run.findings and all(_large(f, capacity) for f in run.findings):
        run = _small_first(subject, profile, planned, seed, capacity, database, run, cap)
    return _counted(run, machine, capacity, drawn)


SMALL_SHARE = 0.4
"""The share of the stateful engine's examples that are small only (16 or
the run's capacity, as before sizes were drawn)."""

SMALL_LEAST = 12
"""Small examples come first however small the budget (a child's budget is
scaled down, run.budget): a fault found first in a large example brings a
witness of a thousand steps, whose every replay costs a pipe round trip per
call."""

RATE = 52.0
"""Examples per work unit (run.budget): calibrated in
benchmarks/results.txt, budgets."""


def _counted(
    run: EngineRun, source: EngineRun | type[PolicyMachine], capacity: int,
    drawn: tuple[int, ...],
) -> EngineRun:
    """``run`` with the capacities its examples drew in its counts and notes;
    its findings stay at the capacity they were found at."""
    if not isinstance(source, EngineRun):
        source.stats.count_capacities(run, capacity, bool(drawn))
    for finding in run.findings:
        if finding.capacity == capacity:
            finding.capacity = None  # the run's own is not repeated
    return run


def _large(finding: Finding, capacity: int) -> bool:
    return finding.capacity is not None and finding.capacity > capacity


def _small_first(
    subject: Subject, profile: Profile, planned: int, seed: int, capacity: int,
    database: ExampleDatabase | None, found: EngineRun, cap: float | None,
) -> EngineRun:
    """``found``, whose findings all come from large examples, or what a run
    of small examples only finds in SMALL_AGAIN of the examples again: a
    fault that also shows at 16 or 64 blocks is reported with a witness of
    a few steps there (a large example's trace holds hundreds of stores,
    too long for the blame to look at), while a fault that needs a size is
    not found and keeps its large witness."""
    small = (SMALL_CAPACITY, capacity)
    again = run_machine(policy_machine(subject, profile, capacity=capacity, drawn=small),
                        engine="stateful", seed=seed, database=database,
                        examples=max(1, round(planned * SMALL_AGAIN)), cap=cap)
    if again.error or not again.findings:
        found.notes.append(f"no small example ({again.examples}) shows what the large "
                           "ones found")
        return found
    again.checked.update(found.checked)
    again.calls += found.calls
    again.steps += found.steps
    again.examples += found.examples
    again.seconds += found.seconds
    again.planned = found.planned
    again.notes[:0] = found.notes
    return again


SMALL_AGAIN = 0.5
"""The share of its examples the engine runs again, small only, when every
finding came from a large example."""


def run_machine(
    machine: type[CheckedMachine],
    *,
    engine: str,
    seed: int,
    examples: int,
    steps: int = 60,
    chunk: int = 10,
    database: ExampleDatabase | None = None,
    cap: float | None = None,
) -> EngineRun:
    """Run ``machine`` for ``examples`` examples, in chunks, until a failure
    is found (or the wall-time ``cap``). Chunk i uses seed ``seed * 7919 +
    i`` and a size from a fixed schedule (small first, growing to
    ``chunk``): the same seed gives the same examples in the same order.
    Hypothesis generates only: it stops at its first failure (no search
    for more, which it bounds by time) and does not shrink (which it bounds
    by time too); policyspec's minimiser, which counts its replays, takes
    every failing trace down (``session``). Hypothesis keeps every example
    of a run until the run ends, so ``chunk`` also sets the peak memory:
    small chunks keep it flat however long the run (benchmarks/results.txt,
    memory). Hypothesis draws from the seed alone (``draws.seed_alone``),
    whatever else the process has imported."""
    with seed_alone():
        return _run_chunks(machine, engine, seed, examples, steps, chunk, database, cap)


def _run_chunks(
    machine: type[CheckedMachine],
    engine: str,
    seed: int,
    examples: int,
    steps: int,
    chunk: int,
    database: ExampleDatabase | None,
    cap: float | None,
) -> EngineRun:
    result = EngineRun(engine=engine)
    result.planned = examples
    started = time.monotonic()
    index = done = 0
    while done < examples:
        if capped(cap):
            result.capped = True
            break
        size = min(chunk, 5 << index, examples - done)
        test = get_state_machine_test(
            machine,
            settings=settings(
                max_examples=size,
                stateful_step_count=steps,
                deadline=None,
                database=database,
                derandomize=False,
                suppress_health_check=list(HealthCheck),
                verbosity=Verbosity.quiet,
                report_multiple_bugs=False,
                print_blob=False,
                phases=[Phase.explicit, Phase.reuse, Phase.generate],
            ),
        )
        test = hypothesis_seed(seed * 7919 + index)(test)
        index += 1
        done += size
        try:
            test()
        except Aborted as aborted:
            _record(result, aborted.failure, engine)
        except ConformanceFailure as failure:
            _record(result, failure, engine)
        except BaseExceptionGroup as group:
            failures, rest = group.split(ConformanceFailure)
            if rest is not None:
                raise
            if failures is not None:
                for leaf in _leaves(failures):
                    _record(result, leaf, engine)
        if result.findings or current_sightings().stopped():
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


def _leaves(group: BaseExceptionGroup[ConformanceFailure]) -> list[ConformanceFailure]:
    out: list[ConformanceFailure] = []
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            out.extend(_leaves(exc))
        else:
            out.append(exc)
    return out


_CAPACITY = "policyspec_capacity"
"""Where a failure raised in a policy machine's example keeps the capacity
the example drew (the failure outlives the example: Hypothesis re-raises
it after shrinking)."""


def stamp_capacity(failure: ConformanceFailure, capacity: int) -> None:
    """Keep on ``failure`` the capacity of the example that raised it."""
    vars(failure)[_CAPACITY] = capacity


def _record(
    result: EngineRun, failure: ConformanceFailure, engine: str
) -> None:
    """A finding of ``failure``, at the capacity its example drew
    (``PolicyMachine._do``; None for the manager's machine)."""
    capacity = vars(failure).get(_CAPACITY)
    result.add(Finding(failure.requirement, failure.message, failure.trace, engine,
                       capacity=capacity if isinstance(capacity, int) else None))


ENGINES = (Engine("stateful", run_stateful, 0.5, parts=2, leads_for="hooks"),)
