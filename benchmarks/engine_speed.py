"""Checked calls per second of each engine against raw replay of its calls.

For each engine and profile: a plain run (its own count of checked policy
calls over its process CPU time), then a run of the same engine and seed
on a recording policy, whose calls are replayed on a fresh reference LRU
without any checking (the physical limit). The ratio is checked / raw: 1.0
would be checking for free; the fast engine's target is 0.25 or more.
Engines bounded by the clock get the same seconds in both runs; the
exhaustive engine runs to its bounds. A replay is short, so each raw figure
is the median of five replays.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from time import process_time

from benchmarks.replay import Log, prepare, recording, replay
from policyspec.engines import ENGINES
from policyspec.profiles import get_profile
from policyspec.reference import LRUCachePolicy
from policyspec.subject import subject_from_class

__all__ = ["EngineSpeed", "measure_engines"]


@dataclass
class EngineSpeed:
    engine: str
    profile: str
    checked: list[float] = field(default_factory=list)
    """Checked calls per CPU second, per repetition."""
    raw: list[float] = field(default_factory=list)
    """Replayed calls per CPU second, per repetition."""
    calls: list[int] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return statistics.median(c / r for c, r in zip(self.checked, self.raw, strict=True))


def _raw_rate(log: Log, replays: int = 5) -> float:
    """Calls per CPU second of a replay of ``log``: the median of a few
    replays (each on fresh policies), since one replay is short."""
    rates = []
    for _ in range(replays):
        program, calls = prepare(log, LRUCachePolicy)
        rates.append(calls / replay(program))
    return statistics.median(rates)


def measure_engines(
    seconds: float, repeats: int, profiles: tuple[str, ...] = ("lru", "core")
) -> list[EngineSpeed]:
    subject = subject_from_class(LRUCachePolicy)
    results: dict[tuple[str, str], EngineSpeed] = {}
    for _ in range(repeats):
        for profile_name in profiles:
            profile = get_profile(profile_name)
            for engine in ENGINES.values():
                if not engine.applies(profile):
                    continue
                speed = results.setdefault(
                    (engine.name, profile_name), EngineSpeed(engine.name, profile_name)
                )
                start = process_time()
                run = engine.run(subject, profile, seconds, 0, 64)
                spent = process_time() - start
                log: Log = []
                engine.run(recording(subject, log), profile, seconds, 0, 64)
                speed.checked.append(run.calls / spent)
                speed.raw.append(_raw_rate(log))
                speed.calls.append(run.calls)
    return list(results.values())
