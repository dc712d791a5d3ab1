"""Checked calls per second of each engine against raw replay of its calls.

For each engine and profile: a plain run (its own count of checked policy
calls over its process CPU time), then a run of the same engine and seed
on a recording policy, whose calls are replayed on a fresh reference LRU
without any checking (the physical limit). The ratio is checked / raw: 1.0
would be checking for free; the fast engine's target is 0.25 or more.
Engines bounded by the clock get the same seconds in both runs; the
exhaustive engine runs to its bounds. A replay is short, so each raw figure
is the median of five replays.

The fast engine, whose ratio has a target, is measured finer: in segments
of ``SEGMENT`` examples (a few tens of milliseconds each), each checked
run followed at once by the raw replay of the same seed's calls, until the
checked runs have used ``seconds`` of CPU time. Both sides then see the
same machine: on a shared VM the speed of the CPU drifts by tens of
percent within a minute, which a checked run and a replay taken seconds
apart do not share.

The fast engine with request traffic (vLLM 0.33's manager: requests,
their hooks, R9's inserts with a context) is measured on the reference LRU
at R9 (``SeedLRUAtR9``: the seed LRU's code with 0.33's signatures and the
base class's default hooks) and on the request-ranked ``LRU033CachePolicy``
with its own hooks, under core, in segments like the fast rows. Its rows
have no raw replay (the recorder does not record hooks): checked calls per
CPU second only, a hook call counted as one call like any other.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from time import process_time
from typing import Any

from benchmarks.replay import Log, prepare, recording, replay
from policyspec.adapters import subject_for_class
from policyspec.engines import ENGINES, EngineContext
from policyspec.engines.fast import run_fast
from policyspec.profiles import Profile, get_profile
from policyspec.reference import LRU033CachePolicy, LRUCachePolicy
from policyspec.subject import Subject, subject_from_class

__all__ = ["EngineSpeed", "SeedLRUAtR9", "measure_engines", "request_subjects"]


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
        """checked / raw (median over repetitions); None without a raw replay."""
        if not self.raw:
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


def _fast_rates(subject: Subject, profile: Profile, seconds: float) -> tuple[float, float, int]:
    """Checked and raw calls per CPU second of the fast engine, and its
    checked calls, over alternating segments (see the module text)."""
    checked_time = raw_time = 0.0
    checked_calls = raw_calls = 0
    seed = 0
    while checked_time < seconds:
        start = process_time()
        run = run_fast(EngineContext(subject, profile, 0, seed, 64, count=SEGMENT))
        checked_time += process_time() - start
        log: Log = []
        run_fast(EngineContext(recording(subject, log), profile, 0, seed, 64, count=SEGMENT))
        program, calls = prepare(log, LRUCachePolicy)
        if calls != run.calls:
            raise RuntimeError(f"seed {seed}: the checked run made {run.calls} calls, its "
                               f"recording {calls}")
        raw_time += replay(program)
        checked_calls += run.calls
        raw_calls += calls
        seed += 1
    return checked_calls / checked_time, raw_calls / raw_time, checked_calls


def _request_rate(
    subject: Subject, profile: Profile, seconds: float
) -> tuple[float, int, int]:
    """Checked calls per CPU second of the fast engine's request traffic
    on ``subject``, its checked calls and the hook calls among them, over
    segments of SEGMENT examples until ``seconds`` of CPU time."""
    spent = 0.0
    calls = hooks = seed = 0
    while spent < seconds:
        start = process_time()
        run = run_fast(EngineContext(subject, profile, 0, seed, 64, count=SEGMENT))
        spent += process_time() - start
        if run.findings or run.error or not run.checked["HOOK-TOTAL"]:
            raise RuntimeError(f"{subject.name}, seed {seed}: {run.error or run.findings} "
                               f"({run.checked['HOOK-TOTAL']} hook calls)")
        calls += run.calls
        hooks += run.checked["HOOK-TOTAL"]
        seed += 1
    return calls / spent, calls, hooks


def measure_engines(
    seconds: float, repeats: int, profiles: tuple[str, ...] = ("lru", "core")
) -> list[EngineSpeed]:
    subject = subject_from_class(LRUCachePolicy)
    results: dict[tuple[str, str], EngineSpeed] = {}
    with_requests = request_subjects() if "core" in profiles else {}
    for _ in range(repeats):
        for label, requesting in with_requests.items():
            speed = results.setdefault(
                ("fast+requests", label), EngineSpeed("fast+requests", "core", label))
            rate, calls, hooks = _request_rate(requesting, get_profile("core"), seconds)
            speed.checked.append(rate)
            speed.calls.append(calls)
            speed.hooks.append(hooks)
        for profile_name in profiles:
            profile = get_profile(profile_name)
            for engine in ENGINES.values():
                if not engine.applies(profile):
                    continue
                speed = results.setdefault(
                    (engine.name, profile_name), EngineSpeed(engine.name, profile_name)
                )
                if engine.name == "fast":
                    checked, raw, calls = _fast_rates(subject, profile, seconds)
                    speed.checked.append(checked)
                    speed.raw.append(raw)
                    speed.calls.append(calls)
                    continue
                start = process_time()
                run = engine.run(EngineContext(subject, profile, seconds, 0, 64))
                spent = process_time() - start
                log: Log = []
                engine.run(EngineContext(recording(subject, log), profile, seconds, 0, 64))
                speed.checked.append(run.calls / spent)
                speed.raw.append(_raw_rate(log))
                speed.calls.append(run.calls)
    return list(results.values())
