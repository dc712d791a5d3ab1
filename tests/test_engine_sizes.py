"""Size as a dimension of the random engines (sources/sizes.py): the
stateful engine draws a capacity per example, from 16 to 10,000 with the
thresholds and their neighbours, and calls of thousands of keys; the fast
engine makes long runs at a capacity of 10^5; ``--capacity`` fixes one
capacity for both; a finding keeps the capacity that shows it; the size
faults of the corpus are caught by a default check; the reference passes."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis.stateful import get_state_machine_test
from test_corpus import FAULTY, load_policy, read_header

from policyspec.adapters import subject_for_class
from policyspec.engines.fast import LONG_COST, LONG_FIRST, run_fast
from policyspec.engines.fast_oracle import FastOracle
from policyspec.engines.manager_machine import manager_machine, run_manager
from policyspec.engines.stateful import (
    SMALL_CAPACITY,
    CheckedMachine,
    capacity_choice,
    drawn_capacities,
    policy_machine,
    run_stateful,
)
from policyspec.model.state import IDLE, IN_FLIGHT
from policyspec.options import CheckOptions
from policyspec.profiles import get_profile
from policyspec.reference import LRUCachePolicy
from policyspec.run.context import EngineContext
from policyspec.session import run_check
from policyspec.sources.action_source import LONG_RUN, ActionSource
from policyspec.sources.sizes import (
    CAPACITIES,
    FAST_LONG_CAPACITY,
    THRESHOLDS,
    peak_keys,
    smaller_capacities,
)
from policyspec.witness.reproduce import failure_of

CORE = get_profile("core")


def test_examples_draw_capacities_from_16_to_10000_small_first() -> None:
    drawn = drawn_capacities(64, fixed=False)
    assert drawn[:2] == (SMALL_CAPACITY, 64)
    assert list(drawn[2:]) == sorted(drawn[2:]) and max(drawn) >= 10**4
    seen: Counter[int] = Counter()

    @settings(max_examples=300, derandomize=True, database=None)
    @given(capacity_choice(drawn, 64))
    def draw(capacity: int) -> None:
        seen[capacity] += 1

    draw()
    for wanted in (16, 64, 65, 127, 128, 129, 255, 256, 257, 1023, 1024, 1025, 4095, 4096, 4097,
                   10_000):
        assert seen[wanted], (wanted, seen)
    assert drawn_capacities(64, fixed=True) == ()


class _Lengths(LRUCachePolicy[Any, Any]):
    """The reference LRU, noting the longest touch and protected set."""

    longest: ClassVar[Counter[str]] = Counter()

    def touch(self, keys: Iterable[Any]) -> None:
        keys = list(keys)
        self.longest["touch"] = max(self.longest["touch"], len(keys))
        super().touch(keys)

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        self.longest["protected"] = max(self.longest["protected"], len(protected))
        self.longest["n"] = max(self.longest["n"], n)
        return super().evict(n, protected)


def _examples(machine: type[CheckedMachine], examples: int, steps: int) -> Counter[int]:
    """Run ``examples`` examples of ``machine`` (a count, not a time: a
    loaded machine runs fewer) from a fixed seed, with ``_Lengths`` noting
    its longest calls; the examples at each capacity."""
    _Lengths.longest.clear()
    get_state_machine_test(machine, settings=settings(
        max_examples=examples, stateful_step_count=steps, deadline=None, database=None,
        derandomize=True, suppress_health_check=list(HealthCheck)))()
    return machine.stats.capacities


@pytest.mark.slow  # hundreds of examples at capacities up to 10^4
def test_stateful_examples_draw_large_capacities_and_call_with_thousands_of_keys() -> None:
    sizes = _examples(policy_machine(subject_for_class(_Lengths), CORE, capacity=64,
                                     drawn=drawn_capacities(64, fixed=False)), 300, 60)
    assert max(sizes) >= 4096 and sum(c for cap, c in sizes.items() if cap > 64) >= 10, sizes
    longest = _Lengths.longest
    # (the draws depend on the process's history a little: margins of 4x)
    assert longest["touch"] >= 1000 and longest["protected"] >= 256, longest
    assert longest["n"] >= 128, longest


@pytest.mark.slow  # hundreds of manager examples at large capacities
def test_manager_examples_draw_large_capacities_with_long_prompts() -> None:
    """The manager machine (the other Hypothesis engine) draws its cache size
    per example too: long prompts touch a thousand keys and one
    prepare_store evicts dozens at once."""
    sizes = _examples(manager_machine(subject_for_class(_Lengths), CORE, capacity=64,
                                      drawn=(64, *(c for c in CAPACITIES if c > 64))), 400, 40)
    assert max(sizes) >= 4096 and sum(c for cap, c in sizes.items() if cap > 64) >= 20, sizes
    longest = _Lengths.longest
    assert longest["touch"] >= 1000 and longest["n"] >= 64, longest


def test_a_fixed_capacity_is_every_manager_example_s() -> None:
    run = run_manager(EngineContext(subject_for_class(LRUCachePolicy), CORE, 1.0, 0, 100,
                                    capacity_fixed=True))
    assert run.error is None and not run.findings
    assert run.counts["largest_capacity"] == 100, run.counts


def test_a_fixed_capacity_is_every_stateful_example_s_and_makes_no_long_fast_run() -> None:
    subject = subject_for_class(LRUCachePolicy)
    run = run_stateful(EngineContext(subject, CORE, 2.0, 0, 100, capacity_fixed=True))
    assert run.counts["largest_capacity"] == 100 and "large_examples" not in run.counts
    fast = run_fast(EngineContext(subject, CORE, 0, 0, 64, count=LONG_FIRST + LONG_COST,
                                  capacity_fixed=True))
    assert "long_runs" not in fast.counts
    options = CheckOptions(budget=3.0, seed=0, engines=("stateful", "manager", "fast"),
                           capacity=100, capacity_fixed=True, jobs=2)
    report = run_check(subject, CORE, options=options)
    assert report.stats["capacity"] == 100
    engines = report.stats["engines"]
    assert engines["stateful"]["largest_capacity"] == 100  # the largest, not a sum over jobs
    assert engines["manager"]["largest_capacity"] == 100
    assert "long_runs" not in engines["fast"]


def test_the_fast_engine_makes_a_long_run_at_a_capacity_of_10_5() -> None:
    run = run_fast(EngineContext(subject_for_class(LRUCachePolicy), CORE, 0, 0, 64,
                                 count=LONG_FIRST + LONG_COST))  # room for one long run
    assert run.error is None and not run.findings
    assert run.counts["long_runs"] == 1
    assert run.counts["largest_keys"] > 10**4 * 8, run.counts  # most of 10^5 blocks
    assert FAST_LONG_CAPACITY >= 10**5


def test_a_long_source_names_thousands_of_keys_and_evicts_hundreds() -> None:
    oracle = FastOracle(FAST_LONG_CAPACITY)
    for key in range(20_000):
        oracle.refs[key] = IDLE
        oracle.idle[key] = None
    source = ActionSource(random.Random(3), pool=30_000, capacity=FAST_LONG_CAPACITY,
                          long=True)
    touches, protected, victims = [], [], []
    for _ in range(3_000):
        run = source.draw(oracle)
        if run[0] == "touch":
            touches.append(len(run[1]))
        elif run[0] == "evict":
            protected.append(len(run[2]))
            victims.append(run[1])
    assert max(touches) >= 4096 and max(touches) <= LONG_RUN
    assert max(protected) >= 1000 and max(victims) >= 257
    assert {256, 257} & set(touches)  # threshold lengths on purpose


def test_smaller_capacities_start_at_the_fullest_the_trace_gets() -> None:
    trace = [("insert", k, IN_FLIGHT) for k in range(300)]
    trace += [("evict", 100, frozenset()), ("remove", 0)]
    assert peak_keys(trace) == 300
    tried = smaller_capacities(10_000, peak_keys(trace))
    assert tried[0] == 300 and tried[1:] == [c for c in CAPACITIES if 300 < c < 10_000]
    assert set(THRESHOLDS) >= {63, 64, 65, 255, 256, 257, 4095, 4096, 4097}


@pytest.mark.slow  # 20 work units of the stateful engine
def test_a_stateful_size_finding_keeps_the_capacity_that_shows_it() -> None:
    header = read_header(FAULTY / "size_touch_bulk_makes_busy_idle.py")
    subject = subject_for_class(load_policy(header.path))
    run = run_stateful(EngineContext(subject, get_profile(header.profile), 20.0, 0, 64))
    assert run.findings, run.notes
    finding = run.findings[0]
    assert any(a[0] == "touch" and len(a[1]) > 256 for a in finding.trace)
    capacity = finding.capacity or 64
    again = failure_of(subject, get_profile(header.profile), capacity, finding.trace,
                       observe=False)
    assert again is not None and again.requirement == finding.requirement
    assert peak_keys(finding.trace) <= capacity


SIZE_FILES = sorted(p.stem for p in Path(FAULTY).glob("size_*.py"))


@pytest.mark.nightly  # six default checks of about a minute each: the nightly job
@pytest.mark.parametrize("stem", SIZE_FILES)
def test_a_default_check_catches_each_size_fault(stem: str) -> None:
    """As ``policyspec check FILE:Policy --profile P``: every default engine,
    the default budget, no --capacity."""
    header = read_header(FAULTY / f"{stem}.py")
    report = run_check(subject_for_class(load_policy(header.path)),
                       get_profile(header.profile), seed=0)
    found = {f.requirement for f in report.failures if f.level == "MUST"}
    assert header.requirement in found, (stem, found)
    assert found <= {header.requirement} | header.also, (stem, found)
