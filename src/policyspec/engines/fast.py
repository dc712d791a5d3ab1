"""The fast engine: many caller-legal actions per second, checked cheaply.

Hypothesis's stateful engine is slow next to a policy, so this one draws
legal actions straight from the oracle's state and checks each call with
``fast_driver.Driver``, including long runs at production capacity
(spec/engines.md, spec/sizes.md). It only detects: it hands the calls of a
failing run to the report's route (``findings.finish``), which replays them
in the ``Lockstep`` harness, names the requirement and shrinks them, so its
findings read like every other engine's; calls the replay does not break
are reported as not reproduced, never as a verdict.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from functools import partial
from time import monotonic

from policyspec.engines.cost import superlinear
from policyspec.engines.fast_driver import Difference, Driver, failed_call
from policyspec.engines.fast_oracle import FastOracle
from policyspec.environment import Environment
from policyspec.harness import ConformanceFailure, Lockstep
from policyspec.harness.failures import COSTLY
from policyspec.harness.keymap import KeyMap
from policyspec.harness.second_thread import on_second_thread
from policyspec.harness.sightings import Sightings
from policyspec.harness.sightings import current as current_sightings
from policyspec.harness.watchdog import CallTimeout
from policyspec.harness.watchdog import current as watch
from policyspec.model.actions import Action
from policyspec.model.state import State
from policyspec.profiles import Profile
from policyspec.protocols import observation_hooks
from policyspec.registry import load_registry
from policyspec.run.context import Engine, EngineContext, capped
from policyspec.run.result import EngineRun, Finding
from policyspec.sources.action_source import ActionSource, Run, actions_of
from policyspec.sources.clock_steps import CLOCK_SHARE, clock_action, with_clock_steps
from policyspec.sources.request_source import RequestSource
from policyspec.sources.sizes import FAST_LONG_CAPACITY, STEEP_MOST, first_played, played_capacities
from policyspec.subject import Subject
from policyspec.vllm.standins.gaps import raise_if_gap

__all__ = [
    "EXAMPLE_STEPS", "LONG_EVERY", "LONG_FIRST", "LONG_STEPS", "SMALL_CAPACITY", "SWEEP_EVERY",
    "count_checks", "run_fast",
]

ENGINE = "fast"
EXAMPLE_STEPS = 500
"""Actions per example (from a fresh policy): long enough to fill the cache
and run it under pressure, short enough to shrink quickly."""
SWEEP_EVERY = 128
"""Every this many actions, every present key is checked (get, block)."""
SMALL_CAPACITY = 16
"""The capacity every other example of request traffic runs at (when the
run's capacity is not fixed): a hook fault that shows only in a full
cache (a store miss that makes room) then shrinks to a witness of a few
tens of steps instead of one that fills 64 blocks (the stateful engine
does the same, engines/stateful.py)."""


LONG_EVERY = 2048
"""Examples from one long run to the next: a long run takes about as long
as LONG_EVERY examples of EXAMPLE_STEPS actions."""
LONG_FIRST = 64
"""The example that is the first long run (the ones before it are the
ordinary examples every budget gets)."""
LONG_COST = 700
"""Examples' worth of work a long run counts for (about what it costs on
the reference LRU): a budget too small for it makes none."""
LONG_STEPS = 3 * FAST_LONG_CAPACITY
"""Actions of a long run: enough to fill 10^5 blocks and work them full."""
LONG_SWEEP = FAST_LONG_CAPACITY
"""Actions between two sweeps of a long run (a sweep gets every present key:
with 10^5 keys, every SWEEP_EVERY actions would cost more than the actions);
at smaller capacities, every ``capacity`` actions (at least SWEEP_EVERY)."""
LONG_CHUNK = 4_096
"""Actions of a long run between two looks at the clock."""
LONG_SALT = 0x5A5E
"""Mixed into a long run's seed (``_long_seed``)."""


def run_fast(ctx: EngineContext, *, steps: int = EXAMPLE_STEPS) -> EngineRun:
    """Check the subject under the profile: RATE examples of ``steps``
    actions per work unit (``ctx.examples``), until the wall-time cap at
    most. The same seed gives the same actions in the same order. With
    request traffic, every other example runs at SMALL_CAPACITY unless the
    capacity is fixed (or not larger)."""
    subject, profile, capacity, seed = ctx.subject, ctx.profile, ctx.capacity, ctx.seed
    fixed, cap = ctx.capacity_fixed, ctx.cap
    run = EngineRun(engine=ENGINE)
    started = monotonic()
    rng = random.Random(seed)
    refinement = profile.refinement
    fast = refinement is None or refinement.keeps_idle_order
    # Without the fast oracle every action runs through the model and the
    # refinement: an example costs about RATE / RATE_LOCKSTEP of the fast path's.
    run.planned = planned = ctx.examples(RATE if fast else RATE_LOCKSTEP)
    # Without touch (R10) a policy's recency comes only from the hooks: the
    # lockstep path gets request traffic too.
    source = _source(subject, rng, _pool(capacity), capacity,
                     requests=fast or not subject.has("touch"))
    if fast:
        sources = {capacity: source}
        if isinstance(source, RequestSource) and not fixed and capacity > SMALL_CAPACITY:
            small = _source(subject, rng, _pool(SMALL_CAPACITY), SMALL_CAPACITY, requests=True)
            sources = {SMALL_CAPACITY: small, capacity: source}
        _run_driver(run, subject, profile, capacity, sources, cap, steps, planned, seed=seed,
                    long=not fixed)
    else:
        run.notes.append(
            f"no fast oracle for the {profile.name} refinement: every action runs through the "
            "model and the refinement's hooks (slower)"
        )
        _run_lockstep(run, subject, profile, capacity, source, cap, steps, planned)
    run.seconds = monotonic() - started
    return run


def _pool(capacity: int) -> int:
    """Keys a source draws from for ``capacity``: half as many again, so
    stores miss and evictions choose."""
    return max(4, capacity + capacity // 2)


def _source(
    subject: Subject, rng: random.Random, pool: int, capacity: int, *, requests: bool,
    long: bool = False,
) -> ActionSource:
    """Request traffic where the manager calls the request hooks (and
    ``requests``: the fast path), else the seed era's; ``long``: a long
    run's source."""
    with_clear, with_touch = subject.has("clear"), subject.has("touch")
    if requests and subject.has("hooks") and subject.make_request is not None:
        return RequestSource(rng, pool=pool, capacity=capacity, with_clear=with_clear,
                             with_touch=with_touch, long=long,
                             hooks=observation_hooks(subject.api))
    return ActionSource(rng, pool=pool, capacity=capacity, with_clear=with_clear,
                        with_touch=with_touch, long=long)


# -- the fast path ---------------------------------------------------------------


def _run_driver(
    run: EngineRun,
    subject: Subject,
    profile: Profile,
    capacity: int,
    sources: dict[int, ActionSource],
    cap: float | None,
    steps: int,
    examples: int,
    *,
    seed: int = 0,
    long: bool = False,
) -> None:
    """``examples`` examples of ``steps`` actions (until the wall-time
    ``cap`` at most), each from the next source in turn (capacity -> its
    source); with ``long``, one in LONG_EVERY is a long run
    (``_long_example``)."""
    keymap = KeyMap(subject.make_key)
    keys = keymap.reals(range(max(source.pool for source in sources.values()) + 4))
    model_of = keymap.index
    must = {rid for rid, req in load_registry().items() if req.level == "MUST"}
    sizes = idles = samples = 0
    kinds: Counter[str] = Counter()
    soft: dict[str, tuple[list[Action], int]] = {}
    turns = list(sources.items())
    sightings = current_sightings()
    threads = subject.has("hooks")
    other = 0
    longs = largest = 0
    long_keys: KeyMap | None = None
    """The real keys of long runs (made once: 10^5 of them take a while)."""
    pending: tuple[int, list[Action], Difference] | None = None
    """A long run's failure that shows at an ordinary capacity: judged at the
    end unless an ordinary example finds it (with a shorter witness)."""
    work = 0
    """Examples' worth of work done (a long run counts LONG_COST)."""
    while work < examples:
        if capped(cap):
            run.capped = True
            break
        if (long and run.examples % LONG_EVERY == LONG_FIRST
                and examples - work >= LONG_COST):
            steep = superlinear(subject)
            if steep is not None:
                run.notes.append(f"{steep}: no long run at {FAST_LONG_CAPACITY:,} blocks (the "
                                 f"size engine still makes calls of up to {STEEP_MOST:,} keys)")
                long = False
                continue
            if long_keys is None:
                long_keys = KeyMap(subject.make_key)
            longs += 1
            work += LONG_COST
            peak, later = _long_example(run, subject, profile, capacity, seed, run.examples,
                                        cap, must, soft, sightings, long_keys)
            largest = max(largest, peak)
            pending = pending or later
            if run.findings or run.error or sightings.stopped():
                break
            continue
        work += 1
        size, source = turns[run.examples % len(turns)]
        if isinstance(source, RequestSource):
            source.begin()
        driver = Driver(subject, size, keys, model_of, profile.refinement)
        draw = with_clock_steps(source.draw, driver.environment, source.rng)
        oracle = driver.oracle
        runs: list[Run] = []
        trace: list[Action] | None = None
        done = chunks = 0
        watch.op = ENGINE
        outer = driver.environment.enter()
        try:
            while done < steps:
                # The watchdog's clock restarts every chunk, not every call:
                # a chunk of fast calls is far below any call time limit.
                watch.restart()
                end = min(steps, done + SWEEP_EVERY)
                chunks += 1
                if threads and chunks % 2 == 0:
                    # Every other chunk from the manager's second thread
                    # (API-ANY-THREAD), as the harness does every other action.
                    start = done
                    done = on_second_thread(partial(_play, driver, draw, runs, kinds, done, end,
                                              must, soft, size, sightings))
                    other += done - start
                else:
                    done = _play(driver, draw, runs, kinds, done, end, must, soft, size,
                                 sightings)
                driver.sweep()
                if size == capacity:
                    sizes += len(oracle.refs)
                    idles += len(oracle.idle)
                    samples += 1
        except Difference as found:
            sightings.saw(found.requirement, driver.calls)
            trace = _spelled(runs)
            _hand_over(run, trace, found, _shown(size, capacity))
        except CallTimeout:
            trace = _spelled(runs)
            message = f"a policy call in {_brief(runs[-1])} did not return within the time limit"
            run.add(Finding("API-RETURNS", message, tuple(trace), ENGINE,
                            capacity=_shown(size, capacity)))
        except Exception as exc:  # the policy raised during a legal call
            raise_if_gap(exc)
            trace = _spelled(runs)
            raised = Difference("API-NO-RAISE", f"{runs[-1]!r} raised {type(exc).__name__}: "
                                f"{keymap.text(str(exc))}")
            _hand_over(run, trace, raised, _shown(size, capacity))
        finally:
            watch.op = None
            driver.environment.leave(outer)
        run.calls += driver.calls
        sightings.calls += driver.calls
        # A failing run's actions were not counted: the trace has them all.
        run.steps += sum(kinds.values()) if trace is None else len(trace)
        run.examples += 1
        count_checks(run, driver, kinds)
        kinds.clear()
        if run.findings or run.error or sightings.stopped():
            break
    if pending is not None and not run.findings and not run.error:
        at, trace, seen = pending
        _hand_over(run, trace, seen, _shown(at, capacity))
    if other:
        run.checked["API-ANY-THREAD"] += other
    for requirement, (trace, size) in soft.items():
        _hand_over(run, trace, _soft(requirement), _shown(size, capacity))
    if longs:
        run.counts["long_runs"] = longs
        run.counts["largest_keys"] = largest  # run_details says it, once per engine
    if samples:
        run.counts["mean_keys"] = round(sizes / samples)
        run.counts["mean_idle"] = round(idles / samples)
        # sums, so that the copies of --jobs add up to one exact average
        run.counts["state_samples"] = samples
        run.counts["state_keys"] = sizes
        run.counts["state_idle"] = idles


def _long_seed(seed: int, example: int) -> int:
    return (seed * 1_000_003 + example) ^ LONG_SALT


def _long_example(
    run: EngineRun, subject: Subject, profile: Profile, capacity: int, seed: int,
    example: int, cap: float | None, must: set[str],
    soft: dict[str, tuple[list[Action], int]], sightings: Sightings, keymap: KeyMap,
) -> tuple[int, tuple[int, list[Action], Difference] | None]:
    """One long run (spec/sizes.md), counted in ``run``; a failure is judged
    at the smallest capacity that shows it (``_smallest_long``). The most
    keys it held at once, and a failure that shows at an ordinary capacity
    (at most ``capacity``) for the caller to judge later: the ordinary
    examples that come next find such a fault with a shorter witness."""
    size = FAST_LONG_CAPACITY
    runs, driver, kinds, found, peak = _play_long(subject, profile, size,
                                                  _long_seed(seed, example), must, soft,
                                                  sightings, keymap, cap)
    run.calls += driver.calls
    sightings.calls += driver.calls
    run.steps += sum(kinds.values()) if found is None else len(_spelled(runs))
    run.examples += 1
    count_checks(run, driver, kinds)
    if found is not None:
        sightings.saw(found.requirement, driver.calls)
        if found.requirement in COSTLY:  # every replay would cost a limit: the route's
            _hand_over(run, _spelled(runs), found, _shown(size, capacity))
            return peak, None
        smaller = _smallest_long(subject, profile, capacity, seed, example, found.requirement,
                                 must, keymap, cap)
        if smaller is not None:
            size, runs = smaller
        if size <= capacity:
            return peak, (size, _spelled(runs), found)
        if size * len(_spelled(runs)) > JUDGE_WORK:
            run.notes.append(
                f"a long run saw {found.requirement} ({found.message[:200]}) at capacity "
                f"{size:,}, the smallest threshold capacity that showed it: its trace of "
                f"{len(_spelled(runs)):,} actions is too long to judge in lockstep here (the "
                "size engine judges faults of that size)")
        else:
            _hand_over(run, _spelled(runs), found, _shown(size, capacity))
    return peak, None


JUDGE_WORK = 1_000_000
"""The longest trace times capacity a long run's failure is judged at: the
lockstep harness checks every block after every call, so a replay costs
about that, and judging and shrinking take several replays, which must
fit in the engine's share of a quick run (benchmarks/results.txt).
Longer ones are notes: the size engine judges faults of that size."""


def _play_long(
    subject: Subject, profile: Profile, size: int, seed: int, must: set[str],
    soft: dict[str, tuple[list[Action], int]], sightings: Sightings, keymap: KeyMap,
    cap: float | None,
) -> tuple[list[Run], Driver, Counter[str], Difference | None, int]:
    """A long run's example at ``size`` from ``seed``: its runs, driver and
    counts, its first MUST difference (None: it passed) and the most keys
    it held at once. Stops at the wall-time ``cap`` (a shorter example, not
    a failure)."""
    rng = random.Random(seed)
    source = _source(subject, rng, _pool(size), size, requests=True, long=True)
    if isinstance(source, RequestSource):
        source.begin()
    keys = keymap.reals(range(source.pool + 4))  # the same real key for a key at every size
    driver = Driver(subject, size, keys, keymap.index, profile.refinement)
    runs: list[Run] = []
    kinds: Counter[str] = Counter()
    # At a smaller size, more actions per block than at FAST_LONG_CAPACITY
    # (room to fill the cache and work it full), and a trace the harness
    # can still judge (JUDGE_WORK).
    steps = min(LONG_STEPS, max(4 * EXAMPLE_STEPS, 8 * size))
    every = max(SWEEP_EVERY, min(size, LONG_SWEEP))
    done = peak = 0
    found: Difference | None = None
    draw = with_clock_steps(source.draw, driver.environment, rng)
    watch.op = ENGINE
    outer = driver.environment.enter()
    try:
        swept = 0
        while done < steps and not capped(cap):
            watch.restart()
            done = _play(driver, draw, runs, kinds, done, min(steps, done + LONG_CHUNK),
                         must, soft, size, sightings)
            peak = max(peak, len(driver.oracle.refs))
            if done - swept >= every:
                driver.sweep()
                swept = done
        driver.sweep()
    except Difference as difference:
        found = difference
    except (CallTimeout, Exception) as exc:  # a legal call raised or hung
        found = failed_call(exc, _brief(runs[-1]), keymap.text)
    finally:
        watch.op = None
        driver.environment.leave(outer)
    return runs, driver, kinds, found, max(peak, len(driver.oracle.refs))


def _smallest_long(
    subject: Subject, profile: Profile, capacity: int, seed: int, example: int,
    requirement: str, must: set[str], keymap: KeyMap, cap: float | None,
) -> tuple[int, list[Run]] | None:
    """A judgeable trace of a long run's failure: its trace at
    FAST_LONG_CAPACITY is far too long to replay in lockstep, so the long
    run of ``example`` is played again from its seed at the capacities
    ``findings.smaller`` gives (the ordinary examples' first), until one
    shows ``requirement`` (its capacity and runs); None: none did (the
    finding stays at FAST_LONG_CAPACITY), or the wall-time ``cap`` came
    first. The report's route then moves it further like any finding."""

    def play(size: int) -> list[Run] | None:
        runs, _, _, found, _ = _play_long(subject, profile, size, _long_seed(seed, example), must,
                                          {}, Sightings(monotonic()), keymap, cap)
        return runs if found is not None and found.requirement == requirement else None

    return first_played(played_capacities(FAST_LONG_CAPACITY, (SMALL_CAPACITY, capacity)),
                        play, cap=cap)


def _brief(run: Run) -> str:
    """A run named without its thousands of keys."""
    if run[0] == "evict":
        return f"evict({run[1]}, <{len(run[2])} protected keys>)"
    return f"{run[0]} of {len(run[1]) if isinstance(run[1], list) else 1} keys"


def _shown(size: int, capacity: int) -> int | None:
    """What a finding of an example at ``size`` says of its capacity: the
    run's own is not repeated."""
    return None if size == capacity else size


def _play(
    driver: Driver,
    draw: Callable[[FastOracle], Run],
    runs: list[Run],
    kinds: Counter[str],
    done: int,
    end: int,
    must: set[str],
    soft: dict[str, tuple[list[Action], int]],
    size: int,
    sightings: Sightings,
) -> int:
    """Draw and run actions on ``driver`` from ``done`` until ``end`` (the
    example's count so far); the new count. A MUST difference raises; a
    SHOULD one is noted in ``soft`` with the trace so far and the example's
    capacity ``size``, and the run goes on."""
    handlers, oracle, record = Driver.HANDLERS, driver.oracle, runs.append
    while done < end:
        drawn = draw(oracle)
        record(drawn)
        kind = drawn[0]
        try:
            count = handlers[kind](driver, drawn)
        except Difference as found:
            if found.requirement in must:
                raise
            sightings.saw(found.requirement, driver.calls)
            soft.setdefault(found.requirement, (_spelled(runs), size))
            count = len(actions_of(drawn))
        done += count
        kinds[kind] += count
    return done


def _spelled(runs: list[Run]) -> list[Action]:
    """The trace of ``runs``: their actions, in order."""
    return [action for drawn in runs for action in actions_of(drawn)]


_BASE = ("API-NO-RAISE", "BLOCK-NO-WRITE")
_MARKED = (*_BASE, "MARK-KEEPS-MEMBERSHIP")
_BY_KIND = {
    "insert": (*_BASE, "INSERT-ADDS", "GET-IDENTITY"),
    "finish_store": _MARKED,
    "start_read": _MARKED,
    "end_read": _MARKED,
    "remove": ("API-NO-RAISE", "REMOVE-DROPS", "GET-ABSENT"),
    "touch": ("API-NO-RAISE", "TOUCH-TOTAL", "TOUCH-KEEPS-MEMBERSHIP"),
    "evict": ("API-NO-RAISE", "EVICT-SHAPE"),
    "get": ("API-NO-RAISE", "GET-IDENTITY", "GET-ABSENT", "GET-KEEPS-MEMBERSHIP"),
    "clear": ("API-NO-RAISE", "CLEAR-EMPTIES"),
    "request": (),
    "on_request_finished": (),
    "clock": (),
}
"""What each kind's handler observes for every action (the calls return,
and ``get`` of the keys it named answers as the oracle says); what an
eviction showed depends on the state and is counted by the driver."""


def count_checks(run: EngineRun, driver: Driver, kinds: Counter[str]) -> None:
    checked = run.checked
    for kind, count in kinds.items():
        for rid in _BY_KIND[kind]:
            checked[rid] += count
    if driver.hooks:  # each hook call returned, and get of its keys answered
        for rid in ("API-NO-RAISE", "HOOK-TOTAL", "HOOK-KEEPS-MEMBERSHIP"):
            checked[rid] += driver.hooks
    if driver.lookups:  # a request's lookups, checked as a get run's
        for rid in _BY_KIND["get"]:
            checked[rid] += driver.lookups
    checked.update(driver.evict_checks)
    checked["EVICT-IDENTITY"] += driver.evicted
    checked["EVICT-REMOVES"] += driver.evicted
    checked["EVICT-ATOMIC"] += driver.refused


# -- any other refinement: the full harness ------------------------------------


def _run_lockstep(
    run: EngineRun,
    subject: Subject,
    profile: Profile,
    capacity: int,
    source: ActionSource,
    cap: float | None,
    steps: int,
    examples: int,
) -> None:
    soft: dict[str, tuple[Action, ...]] = {}
    while run.examples < examples:
        if capped(cap):
            run.capped = True
            break
        harness = Lockstep(subject, profile, capacity, observe=False)
        if isinstance(source, RequestSource):
            source.begin()
        try:
            while len(harness.trace) < steps:
                for action in _next_actions(source, harness.state, harness.environment):
                    harness.apply(action)
        except ConformanceFailure as failure:
            _hand_over(run, list(failure.trace), Difference(failure.requirement, failure.message))
        except CallTimeout:
            run.add(Finding("API-RETURNS", "a policy call did not return within the time "
                            "limit", tuple(harness.trace), ENGINE))
        run.calls += harness.calls
        run.steps += len(harness.trace)
        run.examples += 1
        run.checked.update(harness.checked)
        for soft_failure in harness.soft:
            soft.setdefault(soft_failure.requirement, soft_failure.trace)
        if run.findings or run.error:
            break
    for requirement, trace in soft.items():
        _hand_over(run, list(trace), _soft(requirement))


def _next_actions(source: ActionSource, state: State, environment: Environment) -> list[Action]:
    """The next actions for the lockstep path: once the policy reads a clock,
    now and then a clock step (engines.clock_steps); else one action, or a
    request source's next run spelled out (request traffic comes in runs)."""
    if environment.read_clock and source.rng.random() < CLOCK_SHARE:
        return [clock_action(source.rng)]
    if isinstance(source, RequestSource):
        return actions_of(source.draw(state))
    return [source.next(state)]


# -- handing over -------------------------------------------------------------------------

SHRINK_TRIES = 1000
"""Replays of the route's minimising this engine's budget pays for, per
finding it hands over (``Finding.replays``)."""

RATE = 1400.0
"""Examples of EXAMPLE_STEPS actions per work unit (run.budget): calibrated
in benchmarks/results.txt, budgets."""
RATE_LOCKSTEP = 100.0
"""The same for a refinement without a fast oracle (``_run_lockstep``)."""


def _soft(requirement: str) -> Difference:
    """What the engine saw of a SHOULD it recorded broken and ran on past."""
    return Difference(requirement, f"{requirement}, a SHOULD, broken in this run")


def _hand_over(
    run: EngineRun,
    trace: list[Action],
    found: Difference,
    shown: int | None = None,
) -> None:
    """Hand the exact calls of a run that broke ``found.requirement`` to
    the report's route (``findings.finish``), which replays them on a fresh
    policy, names what they break there and shrinks them, with SHRINK_TRIES
    replays of this engine's on top of its own (none for a hang or a crash:
    each replay of those costs a time limit, and the route bounds their
    count). ``shown``: the capacity the finding says it runs at (None: the
    run's)."""
    watch.op = None
    replays = 0 if found.requirement in COSTLY else SHRINK_TRIES
    run.add(Finding(found.requirement, found.message, tuple(trace), ENGINE, capacity=shown,
                    replays=replays))


ENGINES = (Engine(ENGINE, run_fast, 0.15, parts=2),)
