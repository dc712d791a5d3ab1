"""One mechanism moves a finding to a smaller capacity (findings/smaller.py),
whichever engine found it: the report's route replays a trace handed over
at a capacity above the run's at the smallest capacity that still shows it
(and no further: a fault behind a size stays above that size), the engines
hand their findings over at the capacity they ran at, every replay is
counted, and a long run's seeded example is played again at smaller sizes
through the same module. (A witness that stays long and is searched for
afresh at capacity 8: tests/test_witnesses.py.)"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, ClassVar

import pytest

from policyspec.adapters import subject_for_class
from policyspec.engines.fast import LONG_COST, LONG_FIRST, _smallest_long, run_fast
from policyspec.engines.stateful import _counted
from policyspec.findings.finish import finish
from policyspec.findings.smaller import LONG, same_trace_smaller, to_smaller_capacity
from policyspec.harness.keymap import KeyMap
from policyspec.harness.watchdog import Watchdog
from policyspec.model.actions import Action
from policyspec.model.state import IN_FLIGHT
from policyspec.profiles import get_profile
from policyspec.reference.lru import LRUCachePolicy
from policyspec.registry import load_registry
from policyspec.reports.report import FailureReport
from policyspec.run.context import EngineContext
from policyspec.run.result import EngineRun, Finding
from policyspec.sources.sizes import CAPACITIES, FAST_LONG_CAPACITY, first_played, played_capacities
from policyspec.subject import Subject

CORE = get_profile("core")
RUN = 64
"""The run's capacity in these tests (the default)."""
WANTED = frozenset({"EVICT-EXACT-N"})


class _ShortAbove(LRUCachePolicy[Any, Any]):
    """Evicts one victim too few when asked for two or more, in a cache of
    more than ``limit`` blocks only: a bug on a path small caches never take."""

    limit: ClassVar[int] = 0

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        victims = super().evict(n, protected)
        if self.cache_capacity > self.limit and victims and n > 1:
            victim = victims.pop()
            self.insert(*victim)
            self.mark_evictable(victim[0])
        return victims


def _short_above(limit: int) -> Subject:
    return subject_for_class(type(f"ShortAbove{limit}", (_ShortAbove,), {"limit": limit}))


def _stored(*keys: int) -> list[Action]:
    return [a for k in keys for a in (("insert", k, IN_FLIGHT), ("finish_store", k))]


TRACE: tuple[Action, ...] = (*_stored(0, 1), ("evict", 2, frozenset()))
"""Holds 2 keys at most; fails wherever the bug's path is taken."""


def _finished(subject: Subject, finding: Finding, tries: int = 300) -> FailureReport:
    with Watchdog(0) as watchdog:
        [failure] = finish(subject, CORE, [EngineRun(finding.engine, findings=[finding])],
                           capacity=RUN, seed=0, watchdog=watchdog, tries=tries)
    return failure


def _built(failure: FailureReport) -> int:
    """The capacity the failure's witness runs at, as its report says."""
    assert failure.capacity is not None
    return failure.capacity


@pytest.mark.parametrize("engine", ["stateful", "manager", "trace", "fast"])
@pytest.mark.parametrize("found", [300, 1024, 4097, 10_000])
def test_a_finding_above_the_runs_capacity_moves_to_the_smallest_that_replays_it(
    engine: str, found: int
) -> None:
    # Any engine, any capacity it chose: the same trace replays with 2 keys.
    failure = _finished(_short_above(0), Finding("EVICT-EXACT-N", "m", TRACE, engine,
                                                 capacity=found))
    assert failure.requirement == "EVICT-EXACT-N"
    assert _built(failure) == 2, failure.repro
    assert "shown at capacity" not in failure.message  # the same trace: nothing to explain


@pytest.mark.parametrize(("limit", "smallest"), [(100, 127), (200, 255), (1024, 1025)])
@pytest.mark.parametrize("found", [4096, 10_000])
def test_a_fault_behind_a_size_moves_no_lower_than_the_size_that_shows_it(
    limit: int, smallest: int, found: int
) -> None:
    failure = _finished(_short_above(limit), Finding("EVICT-EXACT-N", "m", TRACE, "stateful",
                                                     capacity=found))
    assert _built(failure) == smallest, failure.repro
    # ... and one found at that capacity already stays there
    again = _finished(_short_above(limit), Finding("EVICT-EXACT-N", "m", TRACE, "stateful",
                                                   capacity=smallest))
    assert _built(again) == smallest, again.repro


@pytest.mark.parametrize("capacity", [None, 16, RUN])
def test_a_short_finding_at_or_below_the_runs_capacity_stays_where_it_was_found(
    capacity: int | None,
) -> None:
    failure = _finished(_short_above(0), Finding("EVICT-EXACT-N", "m", TRACE, "fast",
                                                 capacity=capacity))
    assert _built(failure) == (capacity or RUN), failure.repro


def test_a_finding_moved_to_the_runs_capacity_says_no_capacity_of_its_own() -> None:
    # Fails from 64 blocks on: from 1024 the trace moves to 64, the run's own.
    failure = _finished(_short_above(63), Finding("EVICT-EXACT-N", "m", TRACE, "stateful",
                                                  capacity=1024))
    assert _built(failure) == RUN, failure.repro


def test_every_replay_of_the_same_trace_is_counted_and_bounded() -> None:
    subject = _short_above(200)
    sizes = [2, *(c for c in CAPACITIES if 2 < c < 4096)]  # the order tried
    first = sizes.index(255) + 1
    assert same_trace_smaller(subject, CORE, TRACE, 4096, WANTED, 100, None) == (255, first)
    for tries in (0, 1, first - 1):
        assert same_trace_smaller(subject, CORE, TRACE, 4096, WANTED, tries, None) == (
            None, tries)
    # A cap already past stops before any replay.
    assert same_trace_smaller(subject, CORE, TRACE, 4096, WANTED, 100, 0.0) == (None, 0)
    moved, used = to_smaller_capacity(subject, CORE, TRACE, 4096, WANTED, run_capacity=RUN,
                                      tries=100, cap=None)
    assert moved is not None and (moved.capacity, moved.trace, moved.searched) == (
        255, TRACE, False)
    assert used == first
    # At or below the run's capacity a short trace is not replayed at all,
    # nor a measurement's empty one at any capacity.
    for trace, capacity in ((TRACE, RUN), (TRACE, 16), ((), 4096)):
        assert to_smaller_capacity(subject, CORE, trace, capacity, WANTED, run_capacity=RUN,
                                   tries=100, cap=None) == (None, 0)


def test_a_long_trace_is_searched_for_afresh_below_its_capacity() -> None:
    # A long trace at the run's capacity: no same-trace move, a fresh search
    # finds a witness of a few steps at 8.
    subject = _short_above(0)
    padding: list[Action] = [("get", k) for k in range(LONG)]
    long = (*_stored(0, 1, 2), *padding, ("evict", 2, frozenset()))
    moved, used = to_smaller_capacity(subject, CORE, long, RUN, WANTED, run_capacity=RUN,
                                      tries=100, cap=None)
    assert moved is not None and moved.searched and moved.capacity == 8
    # (the fast engine's finding is shrunk first with the replays its own
    # budget pays for: the route's count is spent only beyond them)
    assert len(moved.trace) < len(long) and 0 <= used <= 100


def test_the_stateful_engine_hands_a_large_finding_over_at_its_capacity() -> None:
    large = Finding("EVICT-EXACT-N", "m", TRACE, "stateful", capacity=4096)
    own = Finding("EVICT-IDENTITY", "m", TRACE, "stateful", capacity=RUN)
    run = _counted(EngineRun("stateful", findings=[large, own]), EngineRun("stateful"), RUN, ())
    assert [f.capacity for f in run.findings] == [4096, None]  # the run's own is not repeated


def test_an_example_is_played_again_at_the_ordinary_capacities_then_the_thresholds() -> None:
    below = [c for c in CAPACITIES if c < FAST_LONG_CAPACITY and c != 64]
    assert played_capacities(FAST_LONG_CAPACITY, (16, 64)) == [16, 64, *below]
    assert played_capacities(128, (16, 64)) == [16, 64, 63, 65, 127]
    assert played_capacities(16, (16, 64)) == []
    played: list[int] = []

    def play(size: int) -> str | None:
        played.append(size)
        return "shown" if size >= 100 else None

    assert first_played([16, 64, 127, 128], play) == (127, "shown")
    assert played == [16, 64, 127]
    assert first_played([16, 64, 127], play, tries=2) is None
    assert first_played([16, 64, 127], play, cap=0.0) is None


@pytest.mark.parametrize(("limit", "size"), [(0, 16), (200, 255)])
def test_a_long_run_is_played_again_at_the_smallest_size_that_shows_it(
    limit: int, size: int
) -> None:
    subject = _short_above(limit)
    must = {rid for rid, req in load_registry().items() if req.level == "MUST"}
    found = _smallest_long(subject, CORE, RUN, 0, LONG_FIRST, "EVICT-EXACT-N", must,
                           KeyMap(subject.make_key), None)
    assert found is not None and found[0] == size


def test_a_long_runs_finding_is_handed_over_at_its_size_and_stays_above_the_fault_s_size(
) -> None:
    # The ordinary examples (16 and 64 blocks) never take the bug's path;
    # the long run does, is played again down to 255 blocks, and the
    # report keeps 255: the route's replays below it do not show it.
    subject = _short_above(200)
    run = run_fast(EngineContext(subject, CORE, 0, 0, RUN, count=LONG_FIRST + LONG_COST))
    assert run.error is None and run.counts["long_runs"] == 1
    [finding] = run.findings
    assert (finding.requirement, finding.capacity) == ("EVICT-EXACT-N", 255)
    failure = _finished(subject, finding)
    assert _built(failure) == 255, failure.repro
    assert len(failure.trace) <= 8, failure.trace
