"""The size engine (engines/size.py): sizes drawn around the thresholds,
up to production sizes, a fixed capacity kept, faults shrunk to the
smallest size that shows them, no false alarm on the references."""

from __future__ import annotations

import random
from pathlib import Path

from test_corpus import load_policy

from policyspec.adapters import subject_for_class
from policyspec.cli import build_parser
from policyspec.commands.check import options_of
from policyspec.engines.fast import LONG_COST, LONG_FIRST, run_fast
from policyspec.engines.size import (
    BUSY_MOST,
    HUGE,
    LENGTH_MOST,
    TIERS,
    Player,
    draw_scenario,
    run_size,
    shrink_scenario,
)
from policyspec.profiles import get_profile
from policyspec.reference import LRUCachePolicy
from policyspec.run.context import EngineContext
from policyspec.sources.sizes import STEEP_MOST

FAULTY = Path(__file__).parent / "faulty"


def test_the_tiers_reach_production_sizes_and_cross_the_thresholds() -> None:
    rng = random.Random(0)
    drawn = [draw_scenario(rng, index, None, HUGE) for index in range(20 * len(TIERS))]
    fills = {s.fill for s in drawn}
    lengths = {s.length for s in drawn}
    assert max(fills) >= 10**5 and max(lengths) >= 10**4
    assert min(fills) <= 8 and min(lengths) <= 8
    assert max(lengths) <= LENGTH_MOST
    for threshold in (64, 256, 1024, 4096):
        assert {threshold - 1, threshold + 1} & fills, threshold
        assert threshold + 1 in lengths or threshold + 2 in lengths, threshold


def test_a_fixed_capacity_is_kept_by_every_scenario() -> None:
    rng = random.Random(1)
    for index in range(3 * len(TIERS)):
        scenario = draw_scenario(rng, index, 100, HUGE)
        assert scenario.capacity(100) == 100
        assert scenario.fill + scenario.busy <= 100
    run = run_size(EngineContext(subject_for_class(LRUCachePolicy), get_profile("lru"), 0, 2, 100,
                                 capacity_fixed=True, count=len(TIERS)))
    assert not run.findings and run.counts["largest_capacity"] == 100


def test_the_references_pass_every_tier() -> None:
    for profile in ("core", "lru"):
        run = run_size(EngineContext(subject_for_class(LRUCachePolicy), get_profile(profile), 0, 5,
                                     64, count=len(TIERS)))
        assert not run.findings and run.error is None, [f.message for f in run.findings]
        assert run.counts["largest_capacity"] >= 10**4
        assert run.checked["EVICT-EXACT-N"] and run.checked["TOUCH-TOTAL"]


def test_a_count_compared_with_is_shrinks_to_257() -> None:
    policy = load_policy(FAULTY / "size_evict_count_compared_with_is.py")
    player = Player(subject_for_class(policy), get_profile("core"), None)
    rng = random.Random(3)
    scenario = next(s for s in (draw_scenario(rng, i, None, 5000) for i in range(200))
                    if s.length > 600 and s.fill > 600 and player.play(s).difference)
    small = shrink_scenario(player, scenario, "EVICT-EXACT-N")
    assert small.length == 257
    evicts = [r for r in player.play(small).runs if r[0] == "evict"]
    assert max(r[1] for r in evicts) == 257


def test_capacity_is_fixed_only_when_given() -> None:
    parser = build_parser()
    drawn = options_of(parser.parse_args(["check", "x:Y"]))
    fixed = options_of(parser.parse_args(["check", "x:Y", "--capacity", "4096"]))
    assert (drawn.capacity, drawn.capacity_fixed) == (64, False)
    assert (fixed.capacity, fixed.capacity_fixed) == (4096, True)


def test_a_sized_finding_is_reported_at_its_own_capacity() -> None:
    from policyspec.session import run_check

    path = FAULTY / "size_touch_bulk_makes_busy_idle.py"
    report = run_check(subject_for_class(load_policy(path)), get_profile("core"), budget=3.0,
                       seed=2, engines=["size"])
    failure = next(f for f in report.failures if f.requirement == "EVICT-IDLE-ONLY")
    assert report.stats["capacity"] == 64  # the run's default; the finding has its own
    assert "policy = Policy(cache_capacity=64)" not in failure.repro
    built = next(line for line in failure.repro.splitlines() if "Policy(cache_capacity=" in line)
    capacity = int(built.split("=")[-1].rstrip(")"))
    assert capacity < 64 and f"capacity {capacity}" in failure.message


def test_a_policy_superlinear_in_length_gets_scenarios_of_at_most_steep_most() -> None:
    """A rescan per victim at 16,385 victims is 10^8 steps a call: the
    engine keeps such a policy's scenarios within STEEP_MOST keys, decided
    by counts (the same on every machine), and says so."""
    subject = subject_for_class(load_policy(FAULTY / "cost_rescan_per_victim.py"))
    run = run_size(EngineContext(subject, get_profile("core"), 0, 5, 64, count=len(TIERS)))
    assert not run.findings and run.error is None
    assert STEEP_MOST // 2 < run.counts["largest_capacity"] <= STEEP_MOST + BUSY_MOST + 3
    assert any("COST-EVICT-LINEAR" in note and f"{STEEP_MOST:,} keys" in note
               for note in run.notes), run.notes


def test_the_fast_engine_makes_no_long_run_for_a_superlinear_policy() -> None:
    """The first long run is due at example LONG_FIRST once LONG_COST
    examples' worth of work is left; a superlinear policy gets ordinary
    examples instead, and the note says why."""
    subject = subject_for_class(load_policy(FAULTY / "cost_rescan_per_victim.py"))
    run = run_fast(EngineContext(subject, get_profile("core"), 0, 3, 64,
                                 count=LONG_FIRST + LONG_COST + 1))
    assert not run.findings and run.error is None
    assert "long_runs" not in run.counts and run.examples == LONG_FIRST + LONG_COST + 1
    assert any("no long run" in note and "COST-EVICT-LINEAR" in note for note in run.notes)
