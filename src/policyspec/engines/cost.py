"""The cost engine (spec/cost.md): how a policy's running time grows.

Each probe measures one operation in two configurations a hundredfold apart
in one dimension and compares the cost per unit, so that a scan of pinned
blocks or a rescan per victim shows whatever the cache's size. Where the
policy's looks at blocks and keys can be counted (``engines.counting``), a
growth in those fails whatever the clock says.
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from time import monotonic, process_time_ns
from typing import Any
from weakref import WeakKeyDictionary

from policyspec.engines.counting import Counter, counted, counting_blocks, counting_key
from policyspec.environment import active
from policyspec.harness.watchdog import CallTimeout
from policyspec.harness.watchdog import current as watch
from policyspec.model.state import IDLE, IN_FLIGHT
from policyspec.run.context import Engine, EngineContext
from policyspec.run.result import EngineRun, Finding
from policyspec.subject import Subject, offload_key

__all__ = ["GROWTH_PROBE", "CostSettings", "Measurement", "length_growth", "measure", "run_cost",
           "superlinear"]

ENGINE = "cost"


@dataclass(frozen=True)
class CostSettings:
    """The sizes and repetitions of the measurements (spec/cost.md)."""

    pinned: int = 1_000
    """Pinned blocks in the small configuration; the large has ``factor`` times more."""
    factor: int = 100
    idle: int = 600
    """Idle blocks beside the pinned ones (a few batches' worth)."""
    idle_for_lengths: int = 2_000
    """Idle blocks when n or len(keys) varies (more than the largest n)."""
    interleaved: int = 3
    """Blocks in flight before each idle one in COST-EVICT-LINEAR's shape
    where pinned blocks dominate (none are in front of the idle ones)."""
    batch: int = 256
    """Calls per sample of get, insert, remove, mark_*."""
    evicted: int = 64
    """n of ``evict(n)`` when the number of pinned blocks varies."""
    fewest: int = 16
    """The small n of ``evict(n)`` and length of ``touch``; the large is ``factor`` times."""
    touched: int = 64
    """Keys of one ``touch`` when the cache size varies."""
    rounds: int = 5
    samples: int = 5
    threshold: float = 10.0
    slow: float = 0.05
    """A sample longer than this (seconds) is not repeated within its round."""


@dataclass
class Measurement:
    """One comparison: the cost per unit in each configuration, per round."""

    requirement: str
    what: str
    small: str
    large: str
    unit: str
    seconds: list[tuple[float, float]] = field(default_factory=list)
    counts: tuple[float, float] | None = None
    """Element operations per unit (small, large): reads of ref_cnt and
    hashes of keys, when the subject uses policyspec's blocks and keys."""
    refused: bool = False
    """evict returned None: nothing could be measured."""

    @property
    def ratio(self) -> float:
        return statistics.median(large / max(small, 1e-12) for small, large in self.seconds)

    @property
    def count_ratio(self) -> float:
        """How many times more element operations per unit the large side
        makes (1.0 when nothing was counted)."""
        if self.counts is None:
            return 1.0
        small, large = self.counts
        return large / small if small else (1.0 if large < 1 else float("inf"))

    def fails_by_count(self, threshold: float) -> bool:
        """The verdict of the counts alone (exact, repeatable)."""
        return not self.refused and self.count_ratio > threshold

    def fails(self, threshold: float) -> bool:
        return not self.refused and (self.ratio > threshold or self.count_ratio > threshold)

    def describe(self, threshold: float) -> str:
        small = statistics.median(s for s, _ in self.seconds)
        large = statistics.median(s for _, s in self.seconds)
        text = (
            f"{self.what} costs {_us(small)} {self.unit} with {self.small} and {_us(large)} "
            f"with {self.large}: {self.ratio:.1f} times more (median of {len(self.seconds)} "
            f"rounds; the spec allows at most {threshold:g})"
        )
        if self.counts is not None and self.count_ratio > threshold:
            text += (
                f"; it reads block fields or hashes keys {self.counts[0]:.0f} times "
                f"{self.unit} with {self.small} and {self.counts[1]:.0f} times with {self.large}"
            )
        return text


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.2f} µs"


class _Filled:
    """A policy holding ``pinned`` blocks (half in flight, half being read),
    inserted first, then ``idle`` idle blocks: the manager's calls only.
    With ``interleave`` > 0 there is nothing in front: each idle block comes
    after ``interleave`` blocks in flight of its own, and ``put_back``
    keeps that shape (see there)."""

    def __init__(
        self,
        subject: Subject,
        keys: Callable[[int, int], list[Hashable]],
        make_block: Callable[[int, int], Any],
        pinned: int,
        idle: int,
        spare: int,
        *,
        interleave: int = 0,
    ) -> None:
        self.policy = subject.build(pinned + idle * (1 + interleave) + spare)
        self.has_mark = subject.has("mark")
        self.make_block = make_block
        self._keys = keys
        self.blocks: dict[Hashable, Any] = {}
        self.used = 0
        self.next_id = 0
        self.interleave = interleave
        self.writing: deque[Hashable] = deque()
        """The interleaved blocks in flight, oldest first."""
        held = self.fresh(pinned)
        self.insert(held)
        self.finish(held[::2])
        self.start_read(held[::2])
        self.idle = self.fresh(idle)
        if interleave:
            for key in self.idle:
                self._behind_writes([key])
        else:
            self.insert(self.idle)
            self.finish(self.idle)

    def _behind_writes(self, keys: Sequence[Hashable]) -> None:
        """Each key stored (in flight, then completed) after ``interleave``
        stores that stay in flight."""
        for key in keys:
            writing = self.fresh(self.interleave)
            self.insert(writing)
            self.writing.extend(writing)
            self.insert([key])
            self.finish([key])

    def fresh(self, count: int) -> list[Hashable]:
        """Keys never used before in this policy."""
        start, self.used = self.used, self.used + count
        return self._keys(start, self.used)

    def new_blocks(self, count: int, ref: int) -> list[Any]:
        """Fresh blocks with block ids no other block has."""
        first, self.next_id = self.next_id, self.next_id + count
        return [self.make_block(ref, block_id) for block_id in range(first, self.next_id)]

    def insert(self, keys: Sequence[Hashable], ref: int = IN_FLIGHT) -> None:
        insert, blocks = self.policy.insert, self.blocks
        for key, block in zip(keys, self.new_blocks(len(keys), ref), strict=True):
            blocks[key] = block
            insert(key, block)

    def finish(self, keys: Sequence[Hashable]) -> None:
        """Stores complete (or loads end): ref_cnt -> 0, then mark_evictable."""
        for key in keys:
            self.blocks[key].ref_cnt = IDLE
            if self.has_mark:
                self.policy.mark_evictable(key)

    def start_read(self, keys: Sequence[Hashable]) -> None:
        """Loads start on idle blocks: mark_non_evictable, then ref_cnt 1."""
        for key in keys:
            if self.has_mark:
                self.policy.mark_non_evictable(key)
            self.blocks[key].ref_cnt = 1

    def remove(self, keys: Sequence[Hashable]) -> None:
        for key in keys:
            self.policy.remove(key)
            del self.blocks[key]

    def put_back(self, victims: list[tuple[Hashable, Any]]) -> None:
        """Evicted keys come back as idle blocks (the API allows inserting
        a block that is already idle). Interleaved, the stores in flight
        that were in front of the victims fail (``remove``, as the manager
        undoes a failed store) and each victim is stored again behind new
        ones: the shape stays the same call after call, instead of growing
        a front of blocks in flight that every later scan must cross."""
        for key, _ in victims:
            del self.blocks[key]
        if not self.interleave:
            self.insert([key for key, _ in victims], IDLE)
            return
        failed = [self.writing.popleft() for _ in range(self.interleave * len(victims))]
        self.remove(failed)
        self._behind_writes([key for key, _ in victims])


# -- samples: (nanoseconds, units) for one configuration ------------------------------


class _Timed:
    """Process CPU time spent inside a ``with`` block; ``counted`` adds up
    the element operations of every timed block."""

    counted = 0

    def __enter__(self) -> _Timed:
        self._counter = Counter()
        self._start = process_time_ns()
        return self

    def __exit__(self, *exc: object) -> None:
        self.spent = process_time_ns() - self._start
        _Timed.counted += self._counter.looks


def _get(cache: _Filled, settings: CostSettings) -> tuple[int, int]:
    keys, get = cache.idle[: settings.batch], cache.policy.get
    with _Timed() as timed:
        for key in keys:
            get(key)
    return timed.spent, len(keys)


def _insert(cache: _Filled, settings: CostSettings) -> tuple[int, int]:
    keys = cache.fresh(settings.batch)
    blocks = cache.new_blocks(len(keys), IN_FLIGHT)
    insert = cache.policy.insert
    with _Timed() as timed:
        for key, block in zip(keys, blocks, strict=True):
            insert(key, block)
    cache.blocks.update(zip(keys, blocks, strict=True))
    cache.remove(keys)
    return timed.spent, len(keys)


def _remove(cache: _Filled, settings: CostSettings) -> tuple[int, int]:
    keys = cache.fresh(settings.batch)
    cache.insert(keys)
    remove = cache.policy.remove
    with _Timed() as timed:
        for key in keys:
            remove(key)
    for key in keys:
        del cache.blocks[key]
    return timed.spent, len(keys)


def _mark(cache: _Filled, settings: CostSettings) -> tuple[int, int]:
    keys = cache.idle[settings.batch : 2 * settings.batch]
    policy, blocks = cache.policy, cache.blocks
    with _Timed() as pin:
        for key in keys:
            policy.mark_non_evictable(key)
    for key in keys:  # the load starts, then ends
        blocks[key].ref_cnt = 1
    for key in keys:
        blocks[key].ref_cnt = IDLE
    with _Timed() as release:
        for key in keys:
            policy.mark_evictable(key)
    return pin.spent + release.spent, len(keys)


def _touch(length: int, calls: int) -> Callable[[_Filled, CostSettings], tuple[int, int]]:
    def sample(cache: _Filled, settings: CostSettings) -> tuple[int, int]:
        keys, touch = cache.idle[:length], cache.policy.touch
        with _Timed() as timed:
            for _ in range(calls):
                touch(keys)
        return timed.spent, calls * len(keys)

    return sample


class _Refused(Exception):
    """evict returned None where enough keys were eligible."""


def _evict(n: int, calls: int) -> Callable[[_Filled, CostSettings], tuple[int, int]]:
    def sample(cache: _Filled, settings: CostSettings) -> tuple[int, int]:
        evict = cache.policy.evict
        spent = made = 0
        while made < calls:
            protected = set(cache.idle[-4:])
            with _Timed() as timed:
                victims = evict(n, protected)
            spent += timed.spent
            made += 1
            if not victims:
                raise _Refused
            cache.put_back(victims)
            if spent / 1e9 > settings.slow:
                break  # a slow call is measured well enough once
        return spent, made * n

    return sample


# -- measuring ---------------------------------------------------------------------------


def measure(subject: Subject, settings: CostSettings = CostSettings()) -> list[Measurement]:
    """Every measurement of spec/cost.md on ``subject`` (the policies with
    one clock and random stream, policyspec.environment)."""
    with active(subject.environment()):
        return _measure(subject, settings)


def _key_source(make_key: Callable[[int], Hashable]) -> Callable[[int, int], list[Hashable]]:
    """Keys by index range, each made once (a policy may keep them)."""
    made: list[Hashable] = []

    def keys(start: int, end: int) -> list[Hashable]:
        made.extend(map(make_key, range(len(made), end)))
        return made[start:end]

    return keys


def _measure(subject: Subject, settings: CostSettings) -> list[Measurement]:
    factories = counted(subject)
    counting = not isinstance(factories, str)
    make_block, make_key = (subject.make_block, subject.make_key) if isinstance(
        factories, str) else factories
    keys = _key_source(make_key)
    big = settings.fewest * settings.factor
    spare = 4 * settings.batch + big

    def filled(pinned: int, idle: int) -> _Filled:
        return _Filled(subject, keys, make_block, pinned, idle, spare)

    small = filled(settings.pinned, settings.idle)
    large = filled(settings.pinned * settings.factor, settings.idle)
    few, many = f"{settings.pinned:,} pinned blocks", f"{settings.pinned * settings.factor:,}"
    sized: list[tuple[str, str, Callable[[_Filled, CostSettings], tuple[int, int]], str]] = [
        ("COST-EVICT-PINNED", f"evict({settings.evicted})", _evict(settings.evicted, 4),
         "per victim"),
        ("COST-GET-FLAT", "get", _get, "per call"),
        ("COST-INSERT-FLAT", "insert", _insert, "per call"),
        ("COST-REMOVE-FLAT", "remove", _remove, "per call"),
    ]
    if subject.has("touch"):  # not R10
        sized.insert(1, ("COST-TOUCH-LINEAR", f"touch of {settings.touched} keys",
                         _touch(settings.touched, 8), "per key"))
    if subject.has("mark"):
        sized.append(("COST-MARK-FLAT", "mark_non_evictable + mark_evictable", _mark,
                      "per pair"))
    out = [
        _compare(Measurement(rid, what, few, many, unit), small, sample, large, sample,
                 settings, counting)
        for rid, what, sample, unit in sized
    ]
    del small, large  # the big one holds a lot of memory
    lengths = (f"n = {settings.fewest}", f"n = {big}")
    # COST-EVICT-LINEAR in two shapes, neither with blocks in front of the
    # idle ones (a front that every victim's rescan crosses costs the same
    # for every n and hides the rescan; it is COST-EVICT-PINNED's business):
    # idle blocks alone, then three blocks in flight before each idle one.
    for pinned_each, what in (
        (0, f"evict(n) among {settings.idle_for_lengths:,} idle blocks"),
        (settings.interleaved, f"evict(n) among {settings.idle_for_lengths:,} idle blocks, "
                               f"{settings.interleaved} in flight before each"),
    ):
        shaped = _Filled(subject, keys, make_block, 0, settings.idle_for_lengths, spare,
                         interleave=pinned_each)
        out.append(_compare(
            Measurement("COST-EVICT-LINEAR", what, *lengths, "per victim"),
            shaped, _evict(settings.fewest, 4), shaped, _evict(big, 1), settings, counting))
        del shaped
    if subject.has("touch"):
        roomy = filled(settings.pinned, settings.idle_for_lengths)
        out.append(_compare(
            Measurement("COST-TOUCH-LINEAR", "touch", f"{settings.fewest} keys", f"{big} keys",
                        "per key"),
            roomy, _touch(settings.fewest, 16), roomy, _touch(big, 1), settings, counting))
    return out


GROWTH_PROBE = CostSettings(idle_for_lengths=600, fewest=16, factor=32, rounds=1, samples=1,
                            slow=float("inf"))
"""The sizes of ``length_growth``: small enough that a rescan per victim
costs little there, far enough apart (16 and 512) that it shows."""


def length_growth(subject: Subject, settings: CostSettings = GROWTH_PROBE) -> list[Measurement]:
    """How the work of one call grows with its length, by counts alone:
    ``evict(n)`` among idle blocks (COST-EVICT-LINEAR's first shape) and,
    where the policy has it, ``touch`` (COST-TOUCH-LINEAR), one call of each
    length. Only counts decide (``Measurement.fails_by_count``), so the
    answer is the same on any machine at any load. Empty when the subject's
    keys are not policyspec's (nothing to count: a policy in another process,
    or keys of its own), and when the policy raises or overruns the call
    time limit on the way: the engines meet that at their own sizes and
    report it there, with a trace."""
    if subject.make_key is not offload_key:
        return []
    keys = _key_source(counting_key)
    make_block = subject.make_block if subject.in_child else (
        counting_blocks(subject.make_block) or subject.make_block)
    big = settings.fewest * settings.factor
    lengths = (f"n = {settings.fewest}", f"n = {big}")
    out: list[Measurement] = []
    watch.op = "the growth probe"
    watch.restart()
    try:
        with active(subject.environment()):
            idle = _Filled(subject, keys, make_block, 0, settings.idle_for_lengths, big)
            out.append(_compare(
                Measurement("COST-EVICT-LINEAR",
                            f"evict(n) among {settings.idle_for_lengths:,} idle blocks",
                            *lengths, "per victim"),
                idle, _evict(settings.fewest, 1), idle, _evict(big, 1), settings, True))
            if subject.has("touch"):
                out.append(_compare(
                    Measurement("COST-TOUCH-LINEAR", "touch", f"{settings.fewest} keys",
                                f"{big} keys", "per key"),
                    idle, _touch(settings.fewest, 1), idle, _touch(big, 1), settings, True))
    except (CallTimeout, Exception):
        return []
    finally:
        watch.op = None
    return out


_DECIDED: WeakKeyDictionary[Subject, str | None] = WeakKeyDictionary()
"""``superlinear``'s answers in this process, by subject."""


def superlinear(subject: Subject) -> str | None:
    """Why the work of ``subject``'s calls grows faster than their length,
    by counts (``length_growth``); None if it does not, or nothing could be
    counted. The engines that make calls of thousands of keys keep them
    shorter for such a policy: the same count decides on every machine.
    Decided once per subject and process: the size and fast engines both
    ask, and a worker may run both."""
    if subject not in _DECIDED:
        _DECIDED[subject] = next(
            (f"{growth.what} does {growth.count_ratio:.0f} times more work {growth.unit} "
             f"with {growth.large} than with {growth.small} (counted; "
             f"{growth.requirement} judges the growth)"
             for growth in length_growth(subject)
             if growth.fails_by_count(GROWTH_PROBE.threshold)), None)
    return _DECIDED[subject]


def _compare(
    result: Measurement,
    first: _Filled,
    first_sample: Callable[[_Filled, CostSettings], tuple[int, int]],
    second: _Filled,
    second_sample: Callable[[_Filled, CostSettings], tuple[int, int]],
    settings: CostSettings,
    counting: bool,
) -> Measurement:
    counted = [0, 0]
    units = [0, 0]
    try:
        for _ in range(settings.rounds):
            costs = []
            for side, (cache, sample) in enumerate(
                ((first, first_sample), (second, second_sample))
            ):
                per_unit = []
                before = _Timed.counted
                for _ in range(settings.samples):
                    spent, count = sample(cache, settings)
                    per_unit.append(spent / 1e9 / count)
                    units[side] += count
                    if spent / 1e9 > settings.slow:
                        break
                counted[side] += _Timed.counted - before
                costs.append(statistics.median(per_unit))
            result.seconds.append((costs[0], costs[1]))
            clear = 3 * settings.threshold
            if counting and counted[0] * clear * units[1] < counted[1] * units[0]:
                break  # the exact counts already say it: more rounds only cost time
            if all(b > clear * a for a, b in result.seconds) and (
                    len(result.seconds) >= 2 or costs[1] * units[1] > SURE):
                # Twice that far apart, or once where the large configuration
                # alone took SURE seconds: no noise makes that much.
                break
    except _Refused:
        result.refused = True
    if counting and not result.refused:
        result.counts = (counted[0] / max(units[0], 1), counted[1] / max(units[1], 1))
    return result


SURE = 1.0
"""Seconds of process CPU time the large configuration of one round must
take for that round alone to decide a comparison that is clear (a rescan per
victim among 100,000 pinned blocks takes seconds a call: the rounds after
it only made a failing cost run overrun the quick budget)."""


# -- the engine ---------------------------------------------------------------------------


def run_cost(ctx: EngineContext, *, settings: CostSettings = CostSettings()) -> EngineRun:
    """Measure every cost requirement once (the budget does not change the
    sizes: a verdict needs the full separation). The seed and the capacity
    play no part."""
    run = EngineRun(engine=ENGINE)
    started = monotonic()
    threshold = settings.threshold
    for measured in measure(ctx.subject, settings):
        rid = measured.requirement
        if measured.refused:
            run.not_applicable.setdefault(
                rid, f"evict returned None in the measurement of {measured.what}")
            continue
        run.checked[rid] += 1
        run.notes.append(
            f"{rid}: {measured.what} {measured.small} -> {measured.large}: "
            f"x{measured.ratio:.2f} (threshold {threshold:g})"
        )
        if measured.fails(threshold):
            run.add(Finding(rid, measured.describe(threshold), (), ENGINE, shrunk=True))
    run.seconds = monotonic() - started
    return run


# Measures fixed sizes (a verdict needs the full separation), whatever its share.
ENGINES = (Engine("cost", run_cost, 0.1, only_for="cost"),)
