"""The arc-memory engine: ARC's memory of its evictions, worked hard.

The other engines draw keys from a pool little larger than the cache and
rarely bring back a key evicted long ago, so an ARC that trims its ghost
lists wrongly passes them. Here small caches see a key pool several times
their capacity (spec/arc.md), and every eviction's victims are compared
exactly with the profile's model, where a wrong target or ghost shows.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from time import monotonic

from policyspec.harness import Aborted, ConformanceFailure, Lockstep
from policyspec.harness.watchdog import CallTimeout
from policyspec.model.actions import Action
from policyspec.model.state import IDLE, IN_FLIGHT
from policyspec.profiles import Profile
from policyspec.run.context import Engine, EngineContext
from policyspec.run.result import EngineRun, Finding
from policyspec.subject import Subject
from policyspec.witness.minimise import bounded_witness
from policyspec.witness.reproduce import fails_with, failure_of

__all__ = ["CAPACITIES", "POOL_FACTOR", "STEPS", "run_arc_memory"]

ENGINE = "arc-memory"
CAPACITIES = (2, 3, 4, 5, 8)
"""Capacities drawn per example (unless fixed): small, so that a few dozen
stores cycle the cache many times and ghosts are trimmed often."""
POOL_FACTOR = 4
"""Keys 0 .. POOL_FACTOR * capacity - 1 may be stored: T1, T2, B1 and B2 can
all be full at once."""
STEPS = 120
"""Caller steps per example (a step is a request's store, a touch, ...)."""
SHRINK_TRIES = 600
"""Replays one finding is shrunk with (a count, not a clock)."""


def run_arc_memory(ctx: EngineContext, *, ranked: bool = False, engine: str = ENGINE) -> EngineRun:
    """RATE sessions per work unit (``ctx.examples``), until the wall-time
    cap at most; the same seed gives the same sessions.
    ``ranked`` (the ``request-memory`` engine, for vLLM's request-ranked
    LRU): requests place their keys
    (``set_positions``), mix hits with misses, and request ids start over
    after a ``clear``, so that a request's context carries a rank from the
    generation before (LRU033-CLEAR-RESET, LRU033-INSERT-RANK)."""
    subject, profile, capacity, fixed = ctx.subject, ctx.profile, ctx.capacity, ctx.capacity_fixed
    run = EngineRun(engine=engine)
    run.planned = planned = ctx.examples(RATE)
    started = monotonic()
    rng = random.Random(ctx.seed)
    while run.examples < planned:
        if ctx.capped():
            run.capped = True
            break
        size = capacity if fixed else rng.choice(CAPACITIES)
        session = _Session(rng, Lockstep(subject, profile, size, observe=False), subject,
                           ranked=ranked)
        harness = session.harness
        try:
            for _ in range(STEPS):
                session.step()
        except (ConformanceFailure, Aborted) as raised:
            failure = raised.failure if isinstance(raised, Aborted) else raised
            _report(run, subject, profile, size, fixed, failure, engine)
        except CallTimeout:
            run.add(Finding("API-RETURNS", "a policy call did not return within the time limit",
                            tuple(harness.trace), engine, capacity=None if fixed else size))
        run.calls += harness.calls
        run.steps += len(harness.trace)
        run.examples += 1
        run.checked.update(harness.checked)
        if run.findings or run.error:
            break
    if not fixed:
        run.notes.append(f"{engine}: capacities {', '.join(map(str, CAPACITIES))}, key pool "
                         f"{POOL_FACTOR} times the capacity")
    run.seconds = monotonic() - started
    return run


def _report(run: EngineRun, subject: Subject, profile: Profile, capacity: int, fixed: bool,
            failure: ConformanceFailure, engine: str) -> None:
    requirement = failure.requirement
    small = bounded_witness(
        failure.trace,
        fails_with(subject, profile, capacity, requirement),
        fails_with(subject, profile, capacity, requirement, observe=False),
        SHRINK_TRIES,
    )[0]
    confirmed = failure_of(subject, profile, capacity, small, fatal=lambda r: r == requirement)
    message = confirmed.message if confirmed is not None else str(failure)
    run.add(Finding(requirement, message, tuple(small), engine, shrunk=True,
                    capacity=None if fixed else capacity))


class _Session:
    """One example: the caller's side of a manager over one policy."""

    def __init__(self, rng: random.Random, harness: Lockstep, subject: Subject, *,
                 ranked: bool) -> None:
        self.rng = rng
        self.ranked = ranked and subject.has("hooks")
        self.harness = harness
        self.capacity = harness.capacity
        self.pool = POOL_FACTOR * harness.capacity
        self.hooks = subject.has("hooks")
        self.touches = subject.has("touch")
        """Without touch (R10) a second access is always a request's reuse."""
        self.clears = subject.has("clear")
        self.inserted: set[int] = set()
        self.request = 0
        self.open: dict[int, tuple[tuple[int, ...], frozenset[int], frozenset[int]]] = {}
        """Requests not finished yet: the keys each saw, inserted, reused."""

    def do(self, action: Action) -> None:
        if action[0] == "insert":
            self.inserted.add(action[1])
        self.harness.apply(action)

    def step(self) -> None:
        roll = self.rng.random()
        if roll < 0.55:
            self.store()
        elif roll < 0.75:
            self.touch()
        elif roll < 0.83:
            self.finish()
        elif roll < 0.91:
            self.evict_idle()
        elif roll < 0.97:
            self.read()
        elif self.clears:
            self.do(("clear",))
            self.open.clear()
            if self.ranked:
                self.request = 0  # ids start over; their contexts keep old ranks
        if self.hooks and self.open and self.rng.random() < 0.4:
            self.finish_request()

    def store(self) -> None:
        """A request stores a few absent keys, half of them departed ones
        (ghosts, or keys ARC has forgotten)."""
        refs = self.harness.state.refs
        absent = [k for k in range(self.pool) if k not in refs]
        departed = [k for k in absent if k in self.inserted]
        count = min(len(absent), self.rng.randint(1, max(1, self.capacity // 2 + 1)))
        keys: list[int] = []
        while len(keys) < count:
            choice = self.rng.choice(departed if departed and self.rng.random() < 0.5
                                     else absent)
            if choice not in keys:
                keys.append(choice)
        self.request += 1
        r = self.request
        seen = list(keys)
        if self.ranked:
            present = sorted(refs)
            hits = self.rng.sample(present, min(len(present), self.rng.randint(0, 2)))
            seen = keys + hits
            self.rng.shuffle(seen)
            self.do(("set_positions", r, tuple((k, i) for i, k in enumerate(seen))))
        if self.hooks:
            self.do(("on_store_miss", r, tuple(keys)))
            self.do(("on_request_access", r, tuple(seen)))
            ready = frozenset(k for k in seen if k not in keys and refs.get(k, IN_FLIGHT) >= IDLE)
            self.open[r] = (tuple(seen), frozenset(keys), ready)
        else:
            self.do(("touch", tuple(keys)))
        need = len(refs) + len(keys) - self.capacity
        if need > 0:
            if need > len(self.harness.state.idle):
                return  # the manager refuses before it asks the policy
            self.do(("evict", need, frozenset(seen)))
            if len(self.harness.state.refs) + len(keys) > self.capacity:
                return  # evict refused: so does the store
        for key in keys:
            self.do(("insert", key, IN_FLIGHT, r) if self.hooks else ("insert", key, IN_FLIGHT))
        if self.rng.random() < 0.85:
            for key in keys:
                self.do(("finish_store", key))

    def _with(self, wanted: str) -> list[int]:
        refs = self.harness.state.refs
        if wanted == "flight":
            return sorted(k for k, r in refs.items() if r == IN_FLIGHT)
        if wanted == "read":
            return sorted(k for k, r in refs.items() if r > IDLE)
        return sorted(k for k, r in refs.items() if r >= IDLE)

    def touch(self) -> None:
        """Ready keys seen again (T1 -> T2), with a departed key now and then:
        by ``touch``, or with the request hooks half the time (always without
        touch, R10) by a request that reuses them (promoted when it finishes)."""
        ready = self._with("ready")
        keys = self.rng.sample(ready, min(len(ready), self.rng.randint(1, 3)))
        if self.hooks and keys and (not self.touches or self.rng.random() < 0.5):
            self.request += 1
            self.do(("on_request_access", self.request, tuple(keys)))
            self.open[self.request] = (tuple(keys), frozenset(), frozenset(keys))
            return
        departed = sorted(self.inserted - set(self.harness.state.refs))
        if departed and self.rng.random() < 0.3:
            keys.append(self.rng.choice(departed))
        if keys and self.touches:
            self.do(("touch", tuple(keys)))

    def finish_request(self) -> None:
        """One open request finishes, with the keys it saw (present or not by
        now), those it only inserted and those it reused."""
        r = self.rng.choice(sorted(self.open))
        seen, inserted, reused = self.open.pop(r)
        self.do(("on_request_finished", r, (seen,), inserted, reused))

    def finish(self) -> None:
        for key in self._with("flight"):
            self.do(("finish_store", key))

    def evict_idle(self) -> None:
        """Every idle key at once: all of T1 and T2 when nothing is busy."""
        idle = len(self.harness.state.idle)
        if idle:
            self.do(("evict", idle, frozenset()))

    def read(self) -> None:
        """A load starts on a ready key, or the loads in progress end."""
        reading = self._with("read")
        if reading and self.rng.random() < 0.6:
            for key in reading:
                while self.harness.state.refs.get(key, IDLE) > IDLE:
                    self.do(("end_read", key))
            return
        ready: Sequence[int] = self._with("ready")
        if ready:
            self.do(("start_read", self.rng.choice(ready)))


RATE = 100.0
"""Sessions per work unit (run.budget): calibrated in benchmarks/results.txt,
budgets."""


def run_ranked(ctx: EngineContext) -> EngineRun:
    """The ``request-memory`` engine: the same sessions, ``ranked``."""
    return run_arc_memory(ctx, ranked=True, engine="request-memory")


ENGINES = (
    # ARC's ghosts and target on small caches over a large key pool
    # (ARC-EVICT-GHOSTS, ARC-STORE-MISS-ADAPT, ARC-CLEAR-RESET): the other
    # engines' pools hide them.
    Engine("arc-memory", run_arc_memory, 0.3, only_for="arc", parts=2),
    # The same sessions for the request-ranked LRU (vLLM 0.33 and 0.34),
    # with placed keys, hits among misses and request ids reused after a
    # clear (LRU033-CLEAR-RESET).
    Engine("request-memory", run_ranked, 0.3, only_for="lru-0.33", parts=2),
)
