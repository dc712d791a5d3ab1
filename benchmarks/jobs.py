"""``--jobs 1`` against ``--jobs 2`` on the reference LRU, in one run.

Checked calls per wall second (the user waits on the wall clock; the point
of workers is to use more than one core of it), alternating the two
settings so that drift of the machine's speed falls on both; the verdicts
must agree. Target: ``--jobs 2`` checks at least 1.8 times the calls per
wall second of ``--jobs 1`` at the standard budget.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from policyspec.adapters import subject_for_class
from policyspec.options import CheckOptions
from policyspec.profiles import get_profile
from policyspec.reference import LRUCachePolicy
from policyspec.session import run_check

__all__ = ["JobsRate", "measure_jobs"]


@dataclass
class JobsRate:
    jobs: int
    rates: list[float] = field(default_factory=list)
    """Checked calls per wall second, per repetition."""
    verdicts: set[str] = field(default_factory=set)


def measure_jobs(
    budget: str | float, repeats: int, profile: str = "lru", settings: tuple[int, ...] = (1, 2)
) -> list[JobsRate]:
    subject = subject_for_class(LRUCachePolicy)
    rates = {jobs: JobsRate(jobs) for jobs in settings}
    for _ in range(repeats):
        for jobs in settings:
            started = time.monotonic()
            report = run_check(subject, get_profile(profile),
                               options=CheckOptions(budget=budget, jobs=jobs, seed=0))
            wall = time.monotonic() - started
            rates[jobs].rates.append(int(report.stats["calls"]) / wall)
            rates[jobs].verdicts.add(report.verdict)
    return list(rates.values())
