"""The size engine: production sizes, and the thresholds implementations switch at.

A fault behind a size threshold (a bulk path for long lists, a heap
rebuilt when many keys change, a fixed buffer, an int compared with ``is``)
never shows in a small cache driven with short calls, so each example
crosses a threshold on purpose, and a failure is bisected down to the
smallest sizes of its scenario that still show it (spec/sizes.md).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from time import monotonic

from policyspec.engines.cost import superlinear
from policyspec.engines.fast import count_checks
from policyspec.engines.fast_driver import Difference, Driver, failed_call
from policyspec.findings.sized import SIZES
from policyspec.harness import ConformanceFailure, Lockstep
from policyspec.harness.failures import COSTLY
from policyspec.harness.keymap import KeyMap
from policyspec.harness.sightings import current as current_sightings
from policyspec.harness.watchdog import CallTimeout
from policyspec.harness.watchdog import current as watch
from policyspec.model.actions import Action
from policyspec.model.state import IDLE, IN_FLIGHT
from policyspec.profiles import Profile
from policyspec.registry import load_registry
from policyspec.run.context import Engine, EngineContext
from policyspec.run.result import EngineRun, Finding
from policyspec.sources.action_source import Run, actions_of
from policyspec.sources.sizes import STEEP_MOST
from policyspec.subject import Subject

__all__ = [
    "HUGE", "LADDER", "LENGTH_MOST", "LOCKSTEP_MOST", "TIERS", "Scenario", "run_size",
    "scenario_runs", "shrink_scenario",
]

ENGINE = "size"

LADDER = (1, 2, 3, 8, 16, 32, 64, 100, 128, 256, 500, 512, 1000, 1024, 2048, 4096,
          8192, 10_000, 16_384, 65_536, 100_000)
"""Sizes implementations switch at; each is drawn with a neighbour
(one below, itself, one or two above)."""
TIERS = ((1, 64), (64, 300), (256, 1100), (1000, 4100), (4096, 20_000), (1000, 4100),
         (10_000, 110_000))
"""(lowest, highest) size of each tier, taken in turn: small ones shrink
and run fast, the large ones reach production sizes."""
HUGE = 100_002
"""The largest ``fill``: a CPU tier of 10^5 chunks."""
LENGTH_MOST = 16_385
"""The longest call (keys of a touch, protected keys, n of an evict): a
prompt of 16,384 chunks offers that many at once."""
LOCKSTEP_MOST = 1_100
"""The largest size where calls go through ``Lockstep`` (a refinement
without a fast oracle: every call steps the full model)."""
BUSY_MOST = 3
"""Stored keys that stay in flight or are being read, at most."""
EXTRA_OPS = 4
"""Operations drawn at random after each operation once (in a random order)."""
@dataclass(frozen=True)
class Scenario:
    """One example: its seed and its two sizes; the capacity the policy is
    built with follows from them (or is the fixed one)."""

    seed: int
    fill: int
    """Keys stored idle at the start."""
    length: int
    busy: int
    """Keys stored besides, that stay in flight or are being read (1 to
    ``BUSY_MOST``)."""
    slack: int
    """Blocks of room the cache has beyond them (0 to 3)."""
    stores: bool
    """The idle keys are stored in flight and completed, as the manager
    stores them (else inserted idle: half the trace)."""

    def capacity(self, fixed: int | None) -> int:
        return fixed if fixed is not None else self.fill + self.busy + self.slack


def _near(rng: random.Random, low: int, high: int) -> int:
    """A ladder size within [low, high], with a neighbour."""
    choices = [size for size in LADDER if low <= size <= high] or [low]
    size = rng.choice(choices) + rng.choice((-1, 0, 1, 1, 2))
    return max(1, min(high, size))


def draw_scenario(rng: random.Random, index: int, fixed: int | None, most: int) -> Scenario:
    """The scenario of example ``index``: its tier's sizes, the fill within
    the fixed capacity when there is one."""
    low, high = TIERS[index % len(TIERS)]
    high = min(high, most)
    low = min(low, high)
    length = _near(rng, min(low, LENGTH_MOST), min(high, LENGTH_MOST))
    fill = _near(rng, low, high)
    busy = 1 + rng.randrange(BUSY_MOST)
    if fixed is not None:
        busy = min(busy, fixed - 1)
        fill = max(1, min(fill, fixed - busy))
    return Scenario(rng.randrange(1 << 32), fill, length, busy, rng.randrange(4),
                    rng.random() < 0.5)


# -- the scenario's runs -------------------------------------------------------


OPS = ("touch_all", "touch_part", "touch_oldest", "touch_one_oldest", "evict_many",
       "evict_protected", "evict_over", "evict_one", "store_more")


class StateView:
    """What a scenario reads while it is played: present keys with their
    ref_cnt, idle keys least recent first (the driver's oracle, or the
    harness's model state)."""

    def __init__(
        self, refs: Callable[[], Mapping[int, int]], idle: Callable[[], Iterable[int]]
    ) -> None:
        self.refs = refs
        self.idle = idle


def scenario_runs(
    scenario: Scenario, capacity: int, view: StateView, *, with_touch: bool = True
) -> Iterator[Run]:
    """The runs of ``scenario`` (``action_source.Run``), each drawn from the
    state the runs before it left (``view``): the same scenario and sizes
    give the same choices, so a smaller size replays a smaller version of
    the same story. Without touch (R10) its touches are left out."""
    rng = random.Random(scenario.seed)
    length = scenario.length
    total = min(scenario.fill + scenario.busy, capacity)
    busy = set(rng.sample(range(total), min(total, scenario.busy)))
    reading = [k for k in sorted(busy) if rng.random() < 0.5]
    stored = [k for k in range(total) if k not in busy]
    absent = iter(range(total, 1 << 40))
    """Keys never stored before (pads of touches and protected sets, new stores)."""
    ops = [*rng.sample(OPS, len(OPS)), *rng.choices(OPS, k=EXTRA_OPS)]
    if scenario.stores:  # stores that complete together, as the manager makes them
        if stored:
            yield ("insert", stored, IN_FLIGHT)
            yield ("finish_store", stored)
    elif stored:
        yield ("insert", stored, IDLE)
    in_flight = [k for k in sorted(busy) if k not in reading]
    if in_flight:
        yield ("insert", in_flight, IN_FLIGHT)
    if reading:
        yield ("insert", reading, IDLE)
        yield ("start_read", reading)

    def pad(keys: list[int]) -> list[int]:
        return keys + [next(absent) for _ in range(length - len(keys))]

    for op in ops:
        if not with_touch and op.startswith("touch"):
            continue
        refs, idle = view.refs(), list(view.idle())
        if op == "touch_all":
            keys = list(refs)
            rng.shuffle(keys)
            yield ("touch", pad(keys[:length]))
        elif op == "touch_part":
            keys = rng.sample(list(refs), max(0, min(length, len(refs) - 1)))
            yield ("touch", pad(keys))
        elif op == "touch_oldest":
            yield ("touch", pad(idle[:length]))
        elif op == "touch_one_oldest":
            if idle:
                yield ("touch", [idle[0]])
        elif op == "evict_many":
            # Half the time with a few keys protected (the newest idle one,
            # one never stored): a policy may take another path then.
            guarded = [*idle[-1:], next(absent)] if rng.random() < 0.5 else []
            n = min(length, max(1, len(idle) - 1 - len(guarded)))
            yield ("evict", n, frozenset(guarded))
        elif op == "evict_protected":
            protected = idle[:min(length, max(0, len(idle) - 1))]
            yield ("evict", 1 + rng.randrange(3), frozenset(pad(protected)))
        elif op == "evict_over":
            yield ("evict", len(idle) + 1, frozenset())
        elif op == "evict_one":
            yield ("evict", 1, frozenset())
        elif op == "store_more":
            # As many as the scenario stored at first (so they shrink with
            # it), where they fit.
            room = min(capacity - len(refs), scenario.fill, length)
            if room > 0:
                yield ("insert", [next(absent) for _ in range(room)], IDLE)


# -- running scenarios ---------------------------------------------------------


@dataclass
class Outcome:
    """What one scenario showed: the runs played, and the first difference
    (None: it passed)."""

    runs: list[Run]
    difference: Difference | None
    calls: int
    soft: Difference | None = None
    """The first SHOULD difference, when the scenario showed no MUST one."""

    def shows(self, requirement: str) -> bool:
        return any(d is not None and d.requirement == requirement
                   for d in (self.difference, self.soft))


class Player:
    """Plays scenarios on fresh policies: through ``fast_driver.Driver``
    (core, the seed LRU's order) or ``Lockstep`` (other refinements)."""

    def __init__(self, subject: Subject, profile: Profile, fixed: int | None) -> None:
        self.subject = subject
        self.profile = profile
        self.fixed = fixed
        refinement = profile.refinement
        self.fast = refinement is None or refinement.keeps_idle_order
        self.keymap = KeyMap(subject.make_key)
        self.keys: list[Hashable] = []
        self.must = {rid for rid, req in load_registry().items() if req.level == "MUST"}
        self.checked: EngineRun = EngineRun(engine=ENGINE)
        """Counts of every scenario played (kept by ``run_size``)."""

    def _reals(self, count: int) -> list[Hashable]:
        if len(self.keys) < count:
            self.keys = self.keymap.reals(range(count))
        return self.keys

    def play(self, scenario: Scenario, count: bool = False) -> Outcome:
        capacity = scenario.capacity(self.fixed)
        if self.fast:
            return self._driver(scenario, capacity, count)
        return self._lockstep(scenario, capacity, count)

    def _driver(self, scenario: Scenario, capacity: int, count: bool) -> Outcome:
        subject = self.subject
        # Keys up to fill + length * (operations) + room: every pad is fresh.
        span = capacity + scenario.length * (len(OPS) + EXTRA_OPS) + 8
        keys = self._reals(span)
        driver = Driver(subject, capacity, keys, self.keymap.index, self.profile.refinement)
        oracle = driver.oracle
        view = StateView(lambda: oracle.refs, lambda: oracle.idle)
        runs: list[Run] = []
        kinds: dict[str, int] = {}
        difference: Difference | None = None
        soft: Difference | None = None
        watch.op = ENGINE
        outer = driver.environment.enter()
        try:
            for run in scenario_runs(scenario, capacity, view,
                                     with_touch=self.subject.has("touch")):
                runs.append(run)
                watch.restart()
                kind = run[0]
                try:
                    done = Driver.HANDLERS[kind](driver, run)
                except Difference as found:
                    if found.requirement in self.must:
                        raise
                    current_sightings().saw(found.requirement, driver.calls)
                    soft = soft or found
                    done = len(actions_of(run))
                kinds[kind] = kinds.get(kind, 0) + done
            watch.restart()
            driver.sweep()
        except Difference as found:
            difference = found
        except (CallTimeout, Exception) as exc:  # a legal call raised or hung
            difference = failed_call(exc, _brief(runs[-1]))
        finally:
            watch.op = None
            driver.environment.leave(outer)
        if count and difference is None:
            from collections import Counter

            count_checks(self.checked, driver, Counter(kinds))
        return Outcome(runs, difference, driver.calls, None if difference else soft)

    def _lockstep(self, scenario: Scenario, capacity: int, count: bool) -> Outcome:
        harness = Lockstep(self.subject, self.profile, capacity, observe=False)
        view = StateView(lambda: harness.state.refs, lambda: harness.state.idle)
        runs: list[Run] = []
        difference: Difference | None = None
        try:
            for run in scenario_runs(scenario, capacity, view,
                                     with_touch=self.subject.has("touch")):
                runs.append(run)
                for action in actions_of(run):
                    harness.apply(action)
        except ConformanceFailure as failure:
            difference = Difference(failure.requirement, failure.message)
        except CallTimeout:
            difference = Difference("API-RETURNS", "a policy call did not return within the "
                                    "time limit")
        if count and difference is None:
            self.checked.checked.update(harness.checked)
        soft = None
        if difference is None and harness.soft:
            first = harness.soft[0]
            current_sightings().saw(first.requirement, harness.calls)
            soft = Difference(first.requirement, first.message)
        return Outcome(runs, difference, harness.calls, soft)


def _brief(run: Run) -> str:
    """A run named without its thousands of keys."""
    kind = run[0]
    if kind == "evict":
        return f"evict({run[1]}, <{len(run[2])} protected keys>)"
    return f"{kind} of {len(run[1])} keys"


def _spelled(runs: Sequence[Run]) -> list[Action]:
    return [action for run in runs for action in actions_of(run)]


def _smallest(fails: Callable[[int], bool], high: int) -> int:
    """The smallest size in [1, high] that ``fails`` (which holds at
    ``high``), by bisection: the fault is assumed to show from some size
    on; the result always fails."""
    low = 1
    while low < high:
        middle = (low + high) // 2
        if fails(middle):
            high = middle
        else:
            low = middle + 1
    return high


def shrink_scenario(player: Player, scenario: Scenario, requirement: str) -> Scenario:
    """The scenario at the smallest length, then fill, then length again,
    that still shows ``requirement`` first."""

    def still(candidate: Scenario) -> bool:
        return player.play(candidate).shows(requirement)

    def shorter(at: Scenario) -> Scenario:
        return _with(at, length=_smallest(lambda n: still(_with(at, length=n)), at.length))

    def emptier(at: Scenario) -> Scenario:
        return _with(at, fill=_smallest(lambda n: still(_with(at, fill=n)), at.fill))

    best = scenario
    for _ in range(2):
        before = best
        best = emptier(shorter(best))
        for change in ({"slack": 0}, {"stores": False}, {"busy": 1}):
            simpler = replace(best, **change)  # from the best so far: changes add up
            if simpler != best and still(simpler):
                best = simpler
        if best == before:
            break
    return best


def _with(scenario: Scenario, *, fill: int | None = None, length: int | None = None) -> Scenario:
    return replace(scenario, fill=scenario.fill if fill is None else fill,
                   length=scenario.length if length is None else length)


def run_size(ctx: EngineContext) -> EngineRun:
    """Check the subject under the profile with scenarios of drawn sizes:
    as many as RATE keys of scenario (``_work``) per work unit pay for
    (``ctx.work``), a scenario that would overrun what is left skipped for
    a smaller one (or ``ctx.count`` scenarios); until the wall-time cap at
    most. A fixed capacity (``--capacity``) builds every scenario's policy
    with it, else each scenario has its own capacity."""
    subject, profile, capacity, fixed = ctx.subject, ctx.profile, ctx.capacity, ctx.capacity_fixed
    examples = ctx.count
    started = monotonic()
    player = Player(subject, profile, capacity if fixed else None)
    run = player.checked
    rng = random.Random(ctx.seed)
    most = HUGE if player.fast else LOCKSTEP_MOST
    steep = superlinear(subject) if most > STEEP_MOST else None
    if steep is not None:
        most = STEEP_MOST
        run.notes.append(f"{steep}: scenarios stay within {STEEP_MOST:,} keys")
    sightings = current_sightings()
    largest = 0
    left = ctx.work(RATE if player.fast else RATE_LOCKSTEP)
    """Keys of scenario work left (``_work``)."""
    index = skipped = 0
    pending: tuple[Scenario, Difference] | None = None
    while (run.examples < examples) if examples is not None else left > 0:
        if ctx.capped():
            run.capped = True
            break
        scenario = draw_scenario(rng, index, capacity if fixed else None, most)
        index += 1
        if examples is None:
            if _work(scenario) > left:  # would overrun the budget: a smaller tier comes next
                skipped += 1
                if skipped > SKIPS_MOST:
                    break  # no tier fits the work left
                continue
            skipped = 0
            left -= _work(scenario)
        outcome = player.play(scenario, count=True)
        run.calls += outcome.calls
        sightings.calls += outcome.calls
        run.steps += sum(len(actions_of(r)) for r in outcome.runs)
        run.examples += 1
        largest = max(largest, scenario.capacity(player.fixed))
        found = outcome.difference
        if found is None and outcome.soft is not None and pending is None:
            pending = (scenario, outcome.soft)  # judged at the end when no MUST shows
        if found is not None:
            sightings.saw(found.requirement, outcome.calls)
            if found.requirement in COSTLY:
                # Handed over as played: the report's route shrinks a hang or
                # a crash with a bounded count of the replays that cost one.
                run.add(Finding(found.requirement, found.message,
                                tuple(_spelled(outcome.runs)), ENGINE,
                                capacity=scenario.capacity(player.fixed)))
            else:
                _hand_over(run, player, scenario, found)
            break
        if sightings.stopped():
            break
    if pending is not None and not run.findings and not run.error:
        # A SHOULD only a size shows is reported too: no other engine plays it.
        _hand_over(run, player, pending[0], pending[1])
    run.planned = run.examples + run.capped  # a capped run had one more to play, at least
    run.counts["largest_capacity"] = largest  # run_details says it, once per engine
    run.seconds = monotonic() - started
    return run


def _work(scenario: Scenario) -> int:
    """What a scenario costs, roughly: the keys it stores and names."""
    return scenario.fill + scenario.busy + scenario.length * (len(OPS) + EXTRA_OPS)


def _hand_over(run: EngineRun, player: Player, scenario: Scenario, found: Difference) -> None:
    """Shrink ``scenario`` by size, then hand the calls of the smallest
    scenario that shows the fault to the report's route
    (``findings.finish``), which replays them on a fresh policy, names what
    they break there and cuts them down (``findings.sized``)."""
    small = shrink_scenario(player, scenario, found.requirement)
    outcome = player.play(small)
    capacity = small.capacity(player.fixed)
    message = (f"{found.message}{SIZES}{small.fill}, calls of {small.length} keys, "
               f"capacity {capacity}: the smallest sizes of this scenario that show it)")
    run.add(Finding(found.requirement, message, tuple(_spelled(outcome.runs)), ENGINE,
                    capacity=capacity))


RATE = 1_100_000
"""Keys of scenario work (``_work``) per work unit (run.budget): calibrated
in benchmarks/results.txt, budgets."""
RATE_LOCKSTEP = 80_000
"""The same for a refinement without a fast oracle (``Player._lockstep``:
every call through the model and the refinement)."""
SKIPS_MOST = 4 * len(TIERS)
"""Draws in a row too large for the work left after which a run stops (every
tier has come round four times)."""


ENGINES = (Engine(ENGINE, run_size, 0.1, parts=2),)
