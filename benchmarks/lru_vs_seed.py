"""The reference LRU against the seed-design baseline on a realistic workload.

The workload's log (benchmarks/workload.py) is replayed on fresh instances
of each policy, alternately, several times; the figure is the median CPU
time of each and their ratio baseline / reference (1.0 or more: the
reference is at least as fast). Both are exact seed LRUs, so both receive
the same calls.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from benchmarks.replay import prepare, replay
from benchmarks.seed_design_lru import SeedDesignLRU
from benchmarks.workload import Workload, make_log
from policyspec.reference import LRUCachePolicy

__all__ = ["Comparison", "compare"]


@dataclass
class Comparison:
    calls: int
    steps: int
    reference: list[float] = field(default_factory=list)
    baseline: list[float] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return statistics.median(self.baseline) / statistics.median(self.reference)


def compare(repeats: int, workload: Workload | None = None) -> Comparison:
    log = make_log(workload or Workload())
    _, calls = prepare(log, LRUCachePolicy)
    result = Comparison(calls=calls, steps=len(log) - 1)
    for _ in range(repeats):
        result.reference.append(replay(prepare(log, LRUCachePolicy)[0]))
        result.baseline.append(replay(prepare(log, SeedDesignLRU)[0]))
    return result
