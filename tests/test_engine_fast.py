"""The fast engine: its oracle agrees with the pure model, its action source
stays inside the caller contract and reaches large states, it passes the
reference policies, and it finds, shrinks and names the faults of planted
mutants like the other engines do.

Speed itself is measured by ``python -m benchmarks``, never asserted here.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable, Collection, Iterable, Iterator, KeysView, Set
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import key_lists, keys, protected_sets, states

from policyspec.adapters import subject_for_class
from policyspec.cli import main
from policyspec.engines.fast import run_fast
from policyspec.engines.fast_driver import Driver
from policyspec.engines.fast_oracle import FastOracle
from policyspec.findings.finish import finish
from policyspec.harness import Lockstep
from policyspec.harness.keymap import KeyMap
from policyspec.harness.watchdog import Watchdog
from policyspec.history.judge import IN_PLACE
from policyspec.model.actions import is_legal
from policyspec.model.evict import eligible
from policyspec.model.preconditions import (
    can_insert,
    can_mark_evictable,
    can_mark_non_evictable,
)
from policyspec.model.state import IDLE, IN_FLIGHT, State
from policyspec.model.step import PREDICT, ProfileModel
from policyspec.profiles import get_profile
from policyspec.reference import ARCCachePolicy, LRUCachePolicy
from policyspec.run.context import EngineContext
from policyspec.session import run_check, shard_seed
from policyspec.sources.action_source import ActionSource, actions_of
from policyspec.subject import Subject, subject_from_class

LRU = subject_from_class(LRUCachePolicy)


# -- the driver and its oracle against the pure model ----------------------------------


@pytest.mark.parametrize("profile", IN_PLACE)  # every profile the in-place oracle serves
@pytest.mark.parametrize("seed", range(3))
def test_the_fast_driver_moves_like_the_model_on_the_same_runs(profile: str, seed: int) -> None:
    """The code that runs: every run the source draws goes through the
    driver (policy calls, inline oracle writes, checks) and, spelled out,
    through the profile's pure model; after each run both hold the same
    state, and every eviction the model predicts is what the reference
    returned (so the driver raised no Difference)."""
    chosen = get_profile(profile)
    keymap = KeyMap(LRU.make_key)
    source = ActionSource(random.Random(seed), pool=24, capacity=16)
    keys = keymap.reals(range(source.pool + 4))
    driver = Driver(LRU, 16, keys, keymap.index, chosen.refinement)
    model = chosen.model(16)
    for _ in range(600):
        drawn = source.draw(driver.oracle)
        Driver.HANDLERS[drawn[0]](driver, drawn)
        for action in actions_of(drawn):
            model = model.after([action])
        assert driver.oracle.to_state() == model.state, drawn
    driver.sweep()
    assert driver.evicted > 10 and driver.calls > 1000


_LEGAL = {"mark_evictable": can_mark_evictable, "mark_non_evictable": can_mark_non_evictable}


@settings(max_examples=100, deadline=None)
@given(start=states(), data=st.data())
def test_the_oracles_step_is_the_models_step_in_place(start: State, data: st.DataObject) -> None:
    oracle = FastOracle(start.capacity)
    oracle.refs.update(start.refs)
    oracle.idle.update(dict.fromkeys(start.idle))
    model = ProfileModel(None, start.copy())
    for _ in range(data.draw(st.integers(0, 30), label="steps")):
        op = data.draw(st.sampled_from(
            ["get", "insert", "remove", "touch", "mark_evictable", "mark_non_evictable",
             "set_ref", "evict", "judge", "clear"]), label="op")
        state = model.state
        call: tuple[Any, ...]
        observed: object = PREDICT
        if op in ("get", "insert", "mark_evictable", "mark_non_evictable"):
            key = data.draw(keys(), label="key")
            call = (op, key)
            if op == "insert":
                call = (op, key, data.draw(st.sampled_from([IN_FLIGHT, IDLE]), label="ref"))
                if not can_insert(state, key, call[2]):
                    continue
            elif op != "get" and not _LEGAL[op](state, key):
                continue
        elif op == "remove":
            if not state.refs:
                continue
            call = (op, data.draw(st.sampled_from(sorted(state.refs)), label="key"))
        elif op == "touch":
            call = (op, tuple(data.draw(key_lists(), label="keys")))
        elif op == "set_ref":  # the manager's write, on a key that is not idle
            pinned = sorted(k for k in state.refs if k not in state.idle)
            if not pinned:
                continue
            key = data.draw(st.sampled_from(pinned), label="key")
            call = (op, key, data.draw(st.integers(IN_FLIGHT, 3), label="ref"))
        elif op in ("evict", "judge"):
            n = data.draw(st.integers(0, len(state.idle) + 1), label="n")
            call = ("evict", n, frozenset(data.draw(protected_sets(), label="protected")))
            assert oracle.eligible_count(call[2]) == len(eligible(state, call[2]))
            if op == "judge":
                observed = data.draw(st.none() | st.lists(keys(), max_size=5), label="victims")
        else:
            call = ("clear",)
        mine, theirs = oracle.step(call, observed), model.step(call, observed)
        assert mine.model is oracle
        assert (mine.expected, mine.violation) == (theirs.expected, theirs.violation), call
        if theirs.violation in (None, "EVICT-LIVENESS"):
            model = theirs.model
        assert oracle.to_state() == model.state, call


# -- the action source -------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_bursts_and_single_actions_stay_inside_the_caller_contract(seed: int) -> None:
    source = ActionSource(random.Random(seed), pool=12, capacity=8)
    harness = Lockstep(LRU, get_profile("lru"), 8, observe=False)
    for index in range(400):
        state = harness.state
        actions = actions_of(source.draw(state)) if index % 2 else [source.next(state)]
        for action in actions:
            assert is_legal(harness.state, action), (action, harness.state)
            harness.apply(action)


def test_the_fast_engine_keeps_large_caches_busy() -> None:
    run = run_fast(EngineContext(LRU, get_profile("lru"), 0, 0, 64, count=6))
    assert run.counts["mean_keys"] >= 40, run.counts
    assert run.counts["mean_idle"] >= 20, run.counts


# -- passing --------------------------------------------------------------------------


@pytest.mark.parametrize("profile", ["lru", "core"])
def test_reference_lru_passes(profile: str) -> None:
    run = run_fast(EngineContext(LRU, get_profile(profile), 0, 1, 64, count=10))
    assert run.findings == [] and run.error is None
    assert run.steps >= 5000 and run.examples == 10
    assert run.checked["EVICT-IDLE-ONLY"] > 0 and run.checked["INSERT-ADDS"] > 0


def test_other_refinements_run_through_the_model_and_its_hooks() -> None:
    subject = subject_for_class(ARCCachePolicy)  # R9: through the seed adapter
    run = run_fast(EngineContext(subject, get_profile("arc"), 0, 0, 16, count=2))
    assert run.findings == [] and run.error is None
    assert any("no fast oracle" in note for note in run.notes)
    assert run.checked["ARC-EVICT-ORDER"] > 0


# -- finding, shrinking, naming -------------------------------------------------------


class IgnoresProtected(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> Any:
        return super().evict(n, set())


class EvictsInFlight(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> Any:
        if n == 0:
            return []
        chosen = [k for k, b in self.blocks.items() if b.ref_cnt <= 0 and k not in protected]
        if len(chosen) < n:
            return None
        for key in chosen[:n]:
            self.evictable_blocks.pop(key, None)
        return [(key, self.blocks.pop(key)) for key in chosen[:n]]


class DropsOnShortage(LRUCachePolicy[Any, Any]):
    """Deletes victims as it finds them; None on shortage (spec/bugs.md V2)."""

    def evict(self, n: int, protected: Collection[Any]) -> Any:
        if n == 0:
            return []
        out = []
        for key in list(self.evictable_blocks):
            if key not in protected:
                del self.evictable_blocks[key]
                out.append((key, self.blocks.pop(key)))
                if len(out) == n:
                    return out
        return None


class TouchesForward(LRUCachePolicy[Any, Any]):
    def touch(self, keys: Iterable[Any]) -> None:
        for key in keys:
            if key in self.evictable_blocks:
                self.evictable_blocks.move_to_end(key)


class WritesRefCnt(LRUCachePolicy[Any, Any]):
    def mark_evictable(self, key: Any) -> None:
        super().mark_evictable(key)
        self.blocks[key].ref_cnt = 0 if self.blocks[key].block_id % 5 else 7


class OneShort(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> Any:
        result = super().evict(n, protected)
        return result[:-1] if result and n >= 3 else result


class RemoveKeepsSome(LRUCachePolicy[Any, Any]):
    def remove(self, key: Any) -> None:
        if self.blocks[key].block_id % 3 != 2:
            super().remove(key)


class RefusesBigEvictions(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> Any:
        return None if n > 3 else super().evict(n, protected)


@pytest.mark.parametrize(
    ("policy", "profile", "requirement", "longest"),
    [
        (IgnoresProtected, "lru", "EVICT-UNPROTECTED", 4),
        (IgnoresProtected, "core", "EVICT-UNPROTECTED", 4),
        (EvictsInFlight, "core", "EVICT-IDLE-ONLY", 4),  # the manager's: one store completes
        (DropsOnShortage, "core", "EVICT-ATOMIC", 4),
        (TouchesForward, "lru", "LRU-TOUCH-ORDER", 8),  # blamed on the touch by the route
        (WritesRefCnt, "core", "BLOCK-NO-WRITE", 3),
        (OneShort, "core", "EVICT-EXACT-N", 8),
        (RemoveKeepsSome, "core", "REMOVE-DROPS", 5),
        (RefusesBigEvictions, "lru", "LRU-LIVENESS", 10),
    ],
    ids=lambda v: v.__name__ if isinstance(v, type) else str(v),
)
def test_a_planted_fault_is_found_shrunk_and_named(
    policy: type, profile: str, requirement: str, longest: int
) -> None:
    # found by the engine, replayed, named and shrunk by the report's route
    report = run_check(subject_from_class(policy), get_profile(profile), budget=20.0, seed=0,
                       engines=("fast",), capacity=64)
    assert not report.errors, report.errors
    assert [f.requirement for f in report.failures] == [requirement], report.failures
    failure = report.failures[0]
    assert failure.engine == "fast" and failure.reproduced
    assert 1 <= len(failure.trace) <= longest, failure.trace


def test_a_should_failure_is_reported_and_the_run_goes_on() -> None:
    run = run_fast(EngineContext(subject_from_class(RefusesBigEvictions), get_profile("core"), 0,
                                 0, 64, count=20))
    assert [f.requirement for f in run.findings] == ["EVICT-LIVENESS"]
    assert run.examples == 20


class FailsOnlyInItsFirstLife(LRUCachePolicy[Any, Any]):
    """Breaks get the first time the class is used, never again: the full
    harness cannot reproduce what the fast engine saw."""

    lives = 0

    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        type(self).lives += 1
        self.first = type(self).lives == 1

    def get(self, key: Any) -> Any:
        return None if self.first else super().get(key)


def test_the_engine_hands_over_its_exact_calls_and_the_route_replays_them() -> None:
    subject = subject_from_class(FailsOnlyInItsFirstLife)
    profile = get_profile("core")
    run = run_fast(EngineContext(subject, profile, 0, 0, 16, count=1))
    # the engine judges nothing itself: its calls, as made, with what it saw
    [seen] = run.findings
    assert not seen.shrunk and seen.trace and run.error is None
    assert seen.replays > 0  # the shrinking its budget pays for, done by the route
    with Watchdog(10) as watchdog:
        [failure] = finish(subject, profile, [run], capacity=16, seed=0, watchdog=watchdog,
                           tries=300)
    # never a lost fault: the engine's run and the replay's, as a failure
    assert not failure.reproduced
    assert "seen by the fast engine" in failure.message
    assert "replayed on a fresh policy" in failure.message
    assert "gave" in failure.message  # what the last call gave on the replay


# -- determinism and counting ----------------------------------------------------------


class _Recording:
    """Forwards to a reference LRU and logs every call."""

    def __init__(self, log: list[tuple[str, Any]], capacity: int) -> None:
        self._policy: LRUCachePolicy[Any, Any] = LRUCachePolicy(capacity)
        self._log = log

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._policy, name)

        def call(*args: Any) -> Any:
            if args and isinstance(args[0], Iterator):  # a generator: log what it gives
                items = list(args[0])
                args = (iter(items), *args[1:])
                self._log.append((name, ("generator", items)))
            elif args and isinstance(args[0], Set | KeysView):
                self._log.append((name, (type(args[0]).__name__, list(args[0]))))
            else:
                self._log.append((name, args[0] if args and name != "insert" else args[:1]))
            return method(*args)

        return call


def _recording(log: list[tuple[str, Any]]) -> Subject:
    return replace(LRU, build=lambda capacity: _Recording(log, capacity))  # type: ignore[arg-type,return-value]


def test_the_same_seed_makes_the_same_calls() -> None:
    first: list[tuple[str, Any]] = []
    second: list[tuple[str, Any]] = []
    run_fast(EngineContext(_recording(first), get_profile("lru"), 0, 7, 32, count=3))
    run_fast(EngineContext(_recording(second), get_profile("lru"), 0, 7, 32, count=3))
    assert first == second and len(first) > 1000


def test_calls_counts_every_policy_call_and_the_report_sums_them() -> None:
    log: list[tuple[str, Any]] = []
    run = run_fast(EngineContext(_recording(log), get_profile("core"), 0, 3, 32, count=2))
    assert run.calls == len(log)
    report = run_check(LRU, get_profile("lru"), budget=1.0, engines=["fast", "stateful"])
    engines = report.stats["engines"]
    assert report.stats["calls"] == sum(e["calls"] for e in engines.values())
    assert engines["fast"]["calls"] > 0 and engines["stateful"]["calls"] > 0


# -- sharding ---------------------------------------------------------------------------


def test_shards_of_one_campaign_get_distinct_seeds_and_one_shard_keeps_the_seed() -> None:
    assert shard_seed(5, (1, 1)) == 5
    seeds = [shard_seed(5, (k, 8)) for k in range(1, 9)]
    assert len(set(seeds)) == 8
    others = {shard_seed(6, (k, 8)) for k in range(1, 9)}
    assert not others & set(seeds)


def test_a_shard_replays_the_same_calls_and_differs_from_its_siblings() -> None:
    logs: list[list[tuple[str, Any]]] = []
    for shard in [(2, 3), (2, 3), (3, 3)]:
        logs.append([])
        run_fast(EngineContext(_recording(logs[-1]), get_profile("lru"), 0, shard_seed(4, shard),
                               32, count=1))
    assert logs[0] == logs[1]
    assert logs[0] != logs[2]


def test_the_cli_shard_option_reaches_the_report(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    code = main(["check", "policyspec.reference:LRUCachePolicy", "--engine", "fast",
                 "--budget", "0.5", "--shard", "2/3", "--json-report", str(out), "-q"])
    assert code == 3  # no failure; MUSTs other engines judge stay unjudged
    assert json.loads(out.read_text())["stats"]["shard"] == "2/3"


# -- the benchmarks' baseline and workload ----------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # benchmarks/ is a package at the repository root
    sys.path.insert(0, str(ROOT))


def test_the_seed_design_baseline_is_an_exact_lru() -> None:
    from benchmarks.seed_design_lru import SeedDesignLRU

    run = run_fast(EngineContext(subject_from_class(SeedDesignLRU), get_profile("lru"), 0, 2, 64,
                                 count=8))
    assert run.findings == [] and run.error is None


def test_the_workload_replays_to_the_same_cache_on_both_lrus() -> None:
    from benchmarks.replay import prepare, replay
    from benchmarks.seed_design_lru import SeedDesignLRU
    from benchmarks.workload import Workload, make_log

    log = make_log(Workload(capacity=256, requests=60, prefix_blocks=(8, 64), failure_rate=0.2))
    assert {"evict", "mark_non_evictable", "set_ref", "remove"} <= {op for op, _ in log}
    held = []
    for factory in (LRUCachePolicy, SeedDesignLRU):
        built: list[Any] = []
        replay(prepare(log, factory, built)[0])
        held.append(sorted(built[0].blocks))
    assert held[0] == held[1] and held[0]
