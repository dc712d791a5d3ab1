"""Budgets are amounts of work (issue 28): the same target, seed and budget
give the same checked calls per engine, the same verdict and the same
minimal traces with ``--jobs 1`` and ``--jobs 2``, and on a machine busy
with three CPU-bound processes. Nothing here is timed: a busy machine makes
the runs longer, and the test says they did the same work.

The faulty policy is one the quick budget finds late (vLLM 0.33.0's ARC
learning from a ghost hit in insert: the stateful engine, seconds into the
run), so the finding, its minimisation and the blame all run."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from policyspec.options import CheckOptions
from policyspec.profiles import get_profile
from policyspec.reports.report import Report
from policyspec.session import check_target

HERE = Path(__file__).parent
CASES = [
    ("policyspec.reference:LRUCachePolicy", "lru", None),
    (f"{HERE / 'faulty' / 'hooks' / 'arc033_adapts_in_insert.py'}:Policy", "arc", 16),
]


def fingerprint(report: Report) -> tuple[Any, ...]:
    """What must not depend on the machine: the verdict, each engine's
    work, and every failure's minimal trace."""
    engines = {name: (s["calls"], s["steps"], s["examples"])
               for name, s in sorted(report.stats["engines"].items())}
    return (report.verdict, report.errors, engines, report.stats["calls"],
            [(f.requirement, f.trace) for f in report.failures])


@contextmanager
def busy(processes: int = 3) -> Iterator[None]:
    """``processes`` CPU-bound processes beside the block."""
    spinning = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(processes)]
    try:
        yield
    finally:
        for process in spinning:
            process.kill()
            process.wait()


@pytest.mark.slow
@pytest.mark.parametrize(("target", "profile", "capacity"), CASES,
                         ids=["reference-lru", "arc033_adapts_in_insert"])
def test_the_same_budget_does_the_same_work_at_any_load_and_any_jobs(
        target: str, profile: str, capacity: int | None) -> None:
    options = CheckOptions(budget="quick", seed=5, jobs=2)
    if capacity is not None:
        options = replace(options, capacity=capacity, capacity_fixed=True)
    chosen = get_profile(profile)
    base = fingerprint(check_target(target, chosen, options))
    alone = fingerprint(check_target(target, chosen, replace(options, jobs=1)))
    with busy():
        loaded = fingerprint(check_target(target, chosen, options))
    assert alone == base, "--jobs 1 did other work than --jobs 2"
    assert loaded == base, "a busy machine changed the work or the result"
    assert base[0] == ("pass" if "reference" in target else "fail")
