"""Checked calls per second of each engine against raw replay of its calls.

Every run is a count of work, as ``policyspec check`` plans it: an engine
gets work units (``EngineContext.units``) and turns them into examples
from its own rate, never a clock. For each engine and profile: a run of
``units`` (its own count of checked policy calls over its process CPU
time), then a run of the same engine, units and seed on a recording
policy, whose calls are replayed on a fresh reference LRU without any
checking (the physical limit). The ratio is checked / raw: 1.0 would be
checking for free; the fast engine's goal is 0.5 or more. The exhaustive
engine runs to its bounds (its depth is an option here). A replay is
short, so each raw figure is the median of five replays.

The fast engine, whose ratio has a goal, is measured finer: the examples
``units`` buy it, in segments of ``SEGMENT`` examples (a few tens of
milliseconds each), each checked run followed at once by the raw replay of
the same seed's calls. Both sides then see the same machine: on a shared
VM the speed of the CPU drifts by tens of percent within a minute, which a
checked run and a replay taken seconds apart do not share.

The fast engine with request traffic (vLLM 0.33's manager: requests,
their hooks, R9's inserts with a context) is measured on the reference LRU
at R9 (``SeedLRUAtR9``: the seed LRU's code with 0.33's signatures and the
base class's default hooks) and on the request-ranked ``LRU033CachePolicy``
with its own hooks, under core, on the same examples in segments. Its rows
have no raw replay (the recorder does not record hooks): checked calls per
CPU second only, a hook call counted as one call like any other.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from time import process_time
from typing import Any

from benchmarks.cost_split import Step, split_cost
from benchmarks.replay import Log, prepare, recording, replay
from policyspec.adapters import subject_for_class
from policyspec.engines import ENGINES, EngineContext, fast
from policyspec.engines.fast import run_fast
from policyspec.profiles import Profile, get_profile
from policyspec.reference import LRU033CachePolicy, LRUCachePolicy
from policyspec.run.context import EngineOptions
from policyspec.subject import Subject, subject_from_class

__all__ = ["FAST_STEPS", "EngineSpeed", "SeedLRUAtR9", "fast_examples", "fast_split",
           "measure_engines", "request_subjects"]


class SeedLRUAtR9(LRUCachePolicy[Any, Any]):
    """The reference LRU at vLLM 0.33's API (R9): ``touch`` and ``insert``
    take the request's context, which it does not use; it defines no hook,
    so the manager's calls reach vLLM's base-class defaults (a store miss
    touches, an access does nothing, a finish touches each group)."""

    def touch(self, keys: Iterable[Any], req_context: Any = None) -> None:
        super().touch(keys)

    def insert(self, key: Any, block: Any, req_context: Any = None) -> None:
        super().insert(key, block)


def request_subjects() -> dict[str, Subject]:
    """The subjects of the request-traffic rows, by label."""
    return {
        "lru@R9": subject_for_class(SeedLRUAtR9, api="R9"),
        "lru-0.33": subject_for_class(LRU033CachePolicy),
    }


@dataclass
class EngineSpeed:
    engine: str
    profile: str
    subject: str = "lru"
    checked: list[float] = field(default_factory=list)
    """Checked calls per CPU second, per repetition."""
    raw: list[float] = field(default_factory=list)
    """Replayed calls per CPU second, per repetition."""
    calls: list[int] = field(default_factory=list)
    hooks: list[int] = field(default_factory=list)
    """Request hook calls among ``calls`` (request traffic only)."""

    @property
    def ratio(self) -> float | None:
        """checked / raw (median over repetitions); None without a raw replay
        (or with an engine that made no call)."""
        if not self.raw or not all(self.raw):
            return None
        return statistics.median(c / r for c, r in zip(self.checked, self.raw, strict=True))


def _raw_rate(log: Log, replays: int = 5) -> float:
    """Calls per CPU second of a replay of ``log``: the median of a few
    replays (each on fresh policies), since one replay is short."""
    rates = []
    for _ in range(replays):
        program, calls = prepare(log, LRUCachePolicy)
        rates.append(calls / replay(program))
    return statistics.median(rates)


SEGMENT = 20
"""Examples per segment of the fast engine's measurement."""

FAST_STEPS: tuple[Step, ...] = (
    ("policy calls", ("policyspec/reference/",)),
    ("drawing actions", ("sources/action_source.py", "sources/request_source.py",
                         "sources/clock_steps.py", "/random.py")),
    ("model (oracle)", ("sources/oracle.py", "policyspec/model/")),
    ("watchdog (clock reads)", ("harness/watchdog.py",)),
    ("driver (calls, checks, bookkeeping)", ("sources/fast_driver.py",)),
    ("engine loop", ("engines/fast.py",)),
    ("harness (shapes, sightings, environment)", ("policyspec/harness/",
                                                  "policyspec/environment")),
)
"""The steps of the fast engine's cost split (``cost_split``)."""


SPLIT_EXAMPLES = 200
"""At most this many examples in the fast engine's profiled run: the
profiler's CPU clock costs a system call per function entry and exit, and
the shares settle long before."""


def fast_examples(units: float) -> int:
    """The fast engine's examples for ``units`` work units (its RATE), at
    least one segment."""
    return max(SEGMENT, round(units * fast.RATE))


def _segments(examples: int) -> list[tuple[int, int]]:
    """(seed, examples) of each segment: seeds 0, 1, ..."""
    return [(seed, min(SEGMENT, examples - first))
            for seed, first in enumerate(range(0, examples, SEGMENT))]


def _fast_rates(subject: Subject, profile: Profile, examples: int) -> tuple[float, float, int]:
    """Checked and raw calls per CPU second of the fast engine, and its
    checked calls, over alternating segments (see the module text)."""
    checked_time = raw_time = 0.0
    checked_calls = raw_calls = 0
    for seed, count in _segments(examples):
        start = process_time()
        run = run_fast(EngineContext(subject, profile, 0, seed, 64, count=count))
        checked_time += process_time() - start
        log: Log = []
        run_fast(EngineContext(recording(subject, log), profile, 0, seed, 64, count=count))
        program, calls = prepare(log, LRUCachePolicy)
        if calls != run.calls:
            raise RuntimeError(f"seed {seed}: the checked run made {run.calls} calls, its "
                               f"recording {calls}")
        raw_time += replay(program)
        checked_calls += run.calls
        raw_calls += calls
    return checked_calls / checked_time, raw_calls / raw_time, checked_calls


def fast_split(profile_name: str, examples: int) -> dict[str, float]:
    """The fast engine's cost by step on the reference LRU (one profiled
    run of ``examples``, at most SPLIT_EXAMPLES), as shares."""
    examples = min(examples, SPLIT_EXAMPLES)
    subject = subject_from_class(LRUCachePolicy)
    profile = get_profile(profile_name)

    def work() -> None:
        for seed, count in _segments(examples):
            run_fast(EngineContext(subject, profile, 0, seed, 64, count=count))

    return split_cost(work, FAST_STEPS)


def _request_rate(
    subject: Subject, profile: Profile, examples: int
) -> tuple[float, int, int]:
    """Checked calls per CPU second of the fast engine's request traffic
    on ``subject``, its checked calls and the hook calls among them, over
    segments of SEGMENT examples."""
    spent = 0.0
    calls = hooks = 0
    for seed, count in _segments(examples):
        start = process_time()
        run = run_fast(EngineContext(subject, profile, 0, seed, 64, count=count))
        spent += process_time() - start
        if run.findings or run.error or not run.checked["HOOK-TOTAL"]:
            raise RuntimeError(f"{subject.name}, seed {seed}: {run.error or run.findings} "
                               f"({run.checked['HOOK-TOTAL']} hook calls)")
        calls += run.calls
        hooks += run.checked["HOOK-TOTAL"]
    return calls / spent, calls, hooks


def measure_engines(
    units: float, repeats: int, profiles: tuple[str, ...] = ("lru", "core"), *,
    exhaustive_depth: int | None = None, progress: Callable[[EngineSpeed], None] | None = None,
) -> list[EngineSpeed]:
    """One row per engine and profile (and the request-traffic rows), each
    ``repeats`` runs of ``units`` work units; ``progress`` gets each row as
    soon as it is measured."""
    subject = subject_from_class(LRUCachePolicy)
    out: list[EngineSpeed] = []
    examples = fast_examples(units)

    def done(speed: EngineSpeed) -> None:
        out.append(speed)
        if progress is not None:
            progress(speed)

    if "core" in profiles:
        for label, requesting in request_subjects().items():
            speed = EngineSpeed("fast+requests", "core", label)
            for _ in range(repeats):
                rate, calls, hooks = _request_rate(requesting, get_profile("core"), examples)
                speed.checked.append(rate)
                speed.calls.append(calls)
                speed.hooks.append(hooks)
            done(speed)
    options = EngineOptions(depth=exhaustive_depth)
    for profile_name in profiles:
        profile = get_profile(profile_name)
        for engine in ENGINES.values():
            if not engine.applies(profile):
                continue
            speed = EngineSpeed(engine.name, profile_name)
            for _ in range(repeats):
                if engine.name == "fast":
                    checked, raw, calls = _fast_rates(subject, profile, examples)
                    speed.checked.append(checked)
                    speed.raw.append(raw)
                    speed.calls.append(calls)
                    continue
                start = process_time()
                run = engine.run(EngineContext(subject, profile, units, 0, 64, options=options))
                spent = process_time() - start
                log: Log = []
                engine.run(EngineContext(recording(subject, log), profile, units, 0, 64,
                                         options=options))
                speed.checked.append(run.calls / spent if spent > 0 else 0.0)
                speed.raw.append(_raw_rate(log) if run.calls else 0.0)
                speed.calls.append(run.calls)
            done(speed)
    return out
