"""--jobs and --fail-fast (policyspec.workers): copies of the time-budgeted
engines on several cores, the exhaustive space split, the same seed and
jobs giving the same work, a dying worker as a verdict, and the first MUST
failure stopping the rest."""

from __future__ import annotations

import time
from pathlib import Path

from policyspec.adapters import load_subject, subject_for_class
from policyspec.engines import ENGINES
from policyspec.options import CheckOptions
from policyspec.profiles import get_profile
from policyspec.reference import LRU034CachePolicy, LRUCachePolicy
from policyspec.session import check_target, run_check, shard_seed
from policyspec.subject import subject_from_class
from policyspec.workers import copy_seed, plan

HERE = Path(__file__).parent


def test_the_parts_are_the_same_with_any_jobs_and_the_space_is_split() -> None:
    chosen = [ENGINES[name] for name in ("fast", "stateful", "exhaustive", "seed-errors")]
    one = plan(chosen, 10.0, 5, (1, 1), 1, shard_seed)
    two = plan(chosen, 10.0, 5, (1, 1), 2, shard_seed)
    parts = [(i.engine, i.copy, i.seed, i.units) for i in two if i.engine != "exhaustive"]
    assert parts == [(i.engine, i.copy, i.seed, i.units) for i in one
                     if i.engine != "exhaustive"]  # the same work, whatever --jobs
    fast = [i for i in two if i.engine == "fast"]
    assert [i.seed for i in fast] == [5, copy_seed(5, 1)] and len({i.units for i in fast}) == 1
    assert [i.shard for i in two if i.engine == "exhaustive"] == [(1, 2), (2, 2)]
    assert [i.engine for i in two].count("seed-errors") == 1  # measures: runs once
    assert two[0].engine == "seed-errors" and two[1].engine == "fast"  # quickest finders first


def test_the_lead_engine_starts_at_once_beside_the_quick_finders() -> None:
    chosen = [ENGINES[name] for name in ("fast", "stateful", "size")]
    hooked = subject_for_class(LRU034CachePolicy)  # the stateful engine leads for hooks
    two = plan(chosen, 10.0, 5, (1, 1), 2, shard_seed, hooked)
    assert [(i.engine, i.copy) for i in two][:3] == [("stateful", 0), ("size", 0), ("size", 1)]
    assert (two[-1].engine, two[-1].copy) == ("stateful", 1)
    one = plan(chosen, 10.0, 5, (1, 1), 1, shard_seed, hooked)
    assert [i.engine for i in one] == ["size", "size", "fast", "fast", "stateful", "stateful"]


def test_two_jobs_give_the_same_work_for_the_same_seed() -> None:
    subject = subject_from_class(LRUCachePolicy)
    options = CheckOptions(engines=("exhaustive",), depth=3, keys=2, jobs=2)
    first = run_check(subject, get_profile("lru"), options=options)
    again = run_check(subject, get_profile("lru"), options=options)
    one = run_check(subject, get_profile("lru"), options=CheckOptions(
        engines=("exhaustive",), depth=3, keys=2, jobs=1))
    for report in (first, again):
        # (no failure; the exhaustive engine alone leaves MUSTs unjudged)
        assert report.verdict == one.verdict == "unjudged" and report.stats["jobs"] == 2
        assert report.verdict_reason == one.verdict_reason
        assert report.stats["steps"] == one.stats["steps"]  # the space is split, not repeated
    assert [(r.id, r.checks) for r in first.requirements] == [
        (r.id, r.checks) for r in again.requirements]


def test_a_fault_is_caught_alike_with_one_and_two_jobs() -> None:
    target = f"{HERE / 'faulty' / 'v01_ignores_protected.py'}:Policy"
    verdicts = [
        {f.requirement for f in check_target(target, "core", CheckOptions(
            budget=2.0, seed=3, jobs=jobs, engines=("fast", "stateful"))).failures}
        for jobs in (1, 2)
    ]
    assert verdicts == [{"EVICT-UNPROTECTED"}] * 2


def test_a_worker_that_dies_is_a_verdict_not_a_hang() -> None:
    started = time.monotonic()
    report = check_target(f"{HERE / 'hostile' / 'os_exit_in_evict.py'}:Policy", "core",
                          CheckOptions(budget=4.0, jobs=2, engines=("fast", "stateful")))
    assert report.verdict == "fail"
    assert [f.requirement for f in report.failures] == ["API-PROCESS-ALIVE"]
    assert "worker process" in report.failures[0].message
    assert time.monotonic() - started < 600  # a hang, not a speed: the run ends


def test_fail_fast_stops_the_other_engines_at_the_first_must_failure() -> None:
    subject = load_subject(f"{HERE / 'faulty' / 'touch_walks_forward.py'}:Policy")
    report = run_check(subject, get_profile("lru"), options=CheckOptions(
        budget=40.0, jobs=2, fail_fast=True))
    assert report.verdict == "fail"
    assert "LRU-TOUCH-ORDER" in {f.requirement for f in report.failures}
    # Work, not time: the run stopped far short of the budget's work (a
    # 40-unit run of these engines makes over ten million checked calls).
    assert report.stats["calls"] < 500_000, report.stats["calls"]
    assert report.failures[0].found_after_calls is not None
