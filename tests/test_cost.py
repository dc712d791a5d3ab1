"""The cost engine (spec/cost.md): its exact counts tell a growing policy
from a flat one, its calls stay inside the caller contract, and the cost
profile reports COST-* ids like any others.

No test asserts a time: verdicts are checked through the counts of block
reads and key hashes, which are exact and repeatable. The timing side is
shown by the 20-run loop in benchmarks/README.md.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Collection, Hashable, Iterable
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from policyspec.adapters import subject_for_class
from policyspec.engines.cost import (
    CostSettings,
    Measurement,
    length_growth,
    measure,
    run_cost,
    superlinear,
)
from policyspec.exits import UsageError
from policyspec.harness.watchdog import Watchdog
from policyspec.model import operations as ops
from policyspec.model.evict import commit_evict
from policyspec.model.preconditions import (
    can_insert,
    can_mark_evictable,
    can_mark_non_evictable,
    can_remove,
)
from policyspec.model.state import State, is_quiescent, well_formed
from policyspec.profiles import get_profile
from policyspec.reference import ARCCachePolicy, LRUCachePolicy
from policyspec.run.context import EngineContext
from policyspec.session import run_check
from policyspec.subject import Block, Subject, subject_from_class

FAULTY = Path(__file__).parent / "faulty"
THRESHOLD = CostSettings().threshold


def _counting(cls: type) -> Subject:
    """``cls`` through the adapters as R9 (the 0.33 ARCs, with touch), on
    policyspec's plain blocks, which the cost engine counts the reads of."""
    return replace(subject_for_class(cls).fitted("R9"), make_block=Block)


def faulty(name: str) -> Subject:
    spec = importlib.util.spec_from_file_location(f"faulty_{name}", FAULTY / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return _counting(module.Policy)


# The quadratic policies at n = 1600 cost seconds per call: n = 8 against
# n = 800 separates them as clearly from a linear one (and the rescanning
# ARC crosses every pinned block per victim: 20,000 of them are enough).
SETTINGS = {
    "cost_rescan_per_victim": CostSettings(fewest=8),
    "cost_arc_rescans_per_victim": CostSettings(fewest=8, pinned=200),
}
REFERENCES = {"lru": LRUCachePolicy, "arc": ARCCachePolicy}


@cache
def measured(name: str) -> dict[str, list[Measurement]]:
    reference = REFERENCES.get(name)
    subject = _counting(reference) if reference else faulty(name)
    out: dict[str, list[Measurement]] = {}
    for m in measure(subject, SETTINGS.get(name, CostSettings())):
        out.setdefault(m.requirement, []).append(m)
    return out


def test_every_cost_requirement_is_measured_with_counts() -> None:
    found = measured("lru")
    assert set(found) == {
        "COST-EVICT-PINNED", "COST-EVICT-LINEAR", "COST-TOUCH-LINEAR", "COST-GET-FLAT",
        "COST-INSERT-FLAT", "COST-REMOVE-FLAT", "COST-MARK-FLAT",
    }
    assert all(m.counts is not None and m.seconds for ms in found.values() for m in ms)


def test_reference_lru_does_the_same_work_per_unit_at_every_size() -> None:
    for requirement, ms in measured("lru").items():
        for m in ms:
            assert m.count_ratio < 1.5, (requirement, m.what, m.counts)
            assert not m.fails_by_count(THRESHOLD)


def test_scanning_every_block_on_evict_fails_cost_evict_pinned() -> None:
    found = measured("cost_scan_all")
    (pinned,) = found["COST-EVICT-PINNED"]
    assert pinned.fails_by_count(THRESHOLD), pinned.counts
    assert "100,000" in pinned.describe(THRESHOLD)
    assert not any(m.fails_by_count(THRESHOLD) for m in found["COST-EVICT-LINEAR"])


def test_rescanning_for_every_victim_fails_cost_evict_linear() -> None:
    found = measured("cost_rescan_per_victim")
    assert len(found["COST-EVICT-LINEAR"]) == 2  # idle blocks alone, and pinned ones between
    for linear in found["COST-EVICT-LINEAR"]:
        assert linear.fails_by_count(THRESHOLD), (linear.what, linear.counts)
    assert not any(m.fails_by_count(THRESHOLD) for m in found["COST-EVICT-PINNED"])


def test_an_arc_rescanning_past_pinned_blocks_fails_cost_evict_linear_in_both_shapes() -> None:
    """Issue 19: with 1,000 pinned blocks in front every rescan paid the
    same crossing for n = 16 and n = 1600 (x2.41, a pass). Without a front,
    whether idle or pinned blocks dominate, the rescan shows."""
    found = measured("cost_arc_rescans_per_victim")
    shapes = {m.what: m for m in found["COST-EVICT-LINEAR"]}
    assert len(shapes) == 2, list(shapes)
    for what, linear in shapes.items():
        assert linear.fails_by_count(THRESHOLD), (what, linear.counts)
        assert linear.count_ratio > 3 * THRESHOLD, (what, linear.counts)
    assert any("3 in flight before each" in what for what in shapes)
    # Each rescan crosses the pinned blocks again: that is COST-EVICT-PINNED too.
    (pinned,) = found["COST-EVICT-PINNED"]
    assert pinned.fails_by_count(THRESHOLD), pinned.counts


def test_the_reference_arc_walks_each_list_once_per_evict() -> None:
    found = measured("arc")
    for linear in found["COST-EVICT-LINEAR"]:
        assert linear.count_ratio < 1.5, (linear.what, linear.counts)
    for requirement in ("COST-GET-FLAT", "COST-INSERT-FLAT", "COST-REMOVE-FLAT",
                        "COST-TOUCH-LINEAR", "COST-MARK-FLAT"):
        assert not any(m.fails_by_count(THRESHOLD) for m in found[requirement]), requirement


def test_cost_findings_are_reported_as_should_failures_of_the_cost_profile() -> None:
    report = run_check(faulty("cost_scan_all"), get_profile("cost"), budget=1.0,
                       engines=["cost"], strict=True)
    status = {r.id: r.status for r in report.requirements}
    assert status["COST-EVICT-PINNED"] == "fail"
    assert "COST-EVICT-PINNED" in [f.requirement for f in report.failures]
    assert {f.level for f in report.failures} == {"SHOULD"} and report.verdict == "fail"


def test_the_cost_engine_runs_only_for_profiles_that_include_cost() -> None:
    report = run_check(subject_from_class(LRUCachePolicy), get_profile("lru"), budget=0.5,
                       engines=["cost", "fast"])
    assert "cost" not in report.stats["engines"] and "fast" in report.stats["engines"]
    assert not any(r.id.startswith("COST-") for r in report.requirements)
    # Alone it would make a run of no engine, which would say PASS unobserved.
    with pytest.raises(UsageError, match="cost runs only under a profile that includes"):
        run_check(subject_from_class(LRUCachePolicy), get_profile("lru"), budget=0.5,
                  engines=["cost"])


class RefusesEverything(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> Any:
        return [] if n == 0 else None


def test_a_policy_whose_evict_refuses_gets_the_evict_costs_not_applicable() -> None:
    small = CostSettings(pinned=20, factor=5, idle=600, idle_for_lengths=120, batch=8,
                         fewest=4, touched=8, rounds=1, samples=1)
    run = run_cost(EngineContext(subject_from_class(RefusesEverything), get_profile("cost"), 1.0,
                                 0, 64), settings=small)
    assert set(run.not_applicable) == {"COST-EVICT-PINNED", "COST-EVICT-LINEAR"}
    assert run.checked["COST-GET-FLAT"] == 1 and run.findings == []


# -- every call the measurements make meets the caller contract ------------------------


class ContractChecked:
    """A reference LRU behind a model of its state: each call is checked
    against the caller contract's predicates before it is forwarded."""

    def __init__(self, capacity: int) -> None:
        self.policy: LRUCachePolicy[Any, Any] = LRUCachePolicy(capacity)
        self.state = State(capacity=capacity)
        self.numbers: dict[Hashable, int] = {}
        self.blocks: dict[int, Any] = {}
        self.calls = 0

    def _k(self, key: Hashable) -> int:
        return self.numbers.setdefault(key, len(self.numbers))

    def _sync(self) -> None:
        """The manager's writes of ref_cnt, read back from the blocks."""
        refs = {k: self.blocks[k].ref_cnt for k in self.state.refs}
        self.state = State(refs, list(self.state.idle), self.state.capacity)
        assert well_formed(self.state), "a ref_cnt write broke the state invariant"

    def insert(self, key: Hashable, block: Any) -> None:
        self._sync()
        k = self._k(key)
        assert can_insert(self.state, k, block.ref_cnt)
        self.state = ops.insert(self.state, k, block.ref_cnt)
        self.blocks[k] = block
        self.policy.insert(key, block)

    def remove(self, key: Hashable) -> None:
        self._sync()
        assert can_remove(self.state, self._k(key))
        self.state = ops.remove(self.state, self._k(key))
        self.policy.remove(key)

    def mark_evictable(self, key: Hashable) -> None:
        self._sync()
        assert can_mark_evictable(self.state, self._k(key))
        self.state = ops.mark_evictable(self.state, self._k(key))
        self.policy.mark_evictable(key)

    def mark_non_evictable(self, key: Hashable) -> None:
        self._sync()
        assert can_mark_non_evictable(self.state, self._k(key))
        self.state = ops.mark_non_evictable(self.state, self._k(key))
        self.policy.mark_non_evictable(key)

    def touch(self, keys: Iterable[Hashable]) -> None:
        keys = list(keys)
        self.state = ops.touch(self.state, [self._k(key) for key in keys])
        self.policy.touch(keys)

    def get(self, key: Hashable) -> Any:
        return self.policy.get(key)

    def evict(self, n: int, protected: Collection[Hashable]) -> Any:
        self._sync()
        assert n >= 0 and is_quiescent(self.state), "evict between two manager steps only"
        result = self.policy.evict(n, set(protected))
        if result:
            self.state = commit_evict(self.state, [self._k(key) for key, _ in result])
        return result

    def clear(self) -> None:
        raise AssertionError("the cost measurements never clear")


def test_every_call_of_the_measurements_meets_the_caller_contract() -> None:
    built: list[ContractChecked] = []

    def build(capacity: int) -> Any:
        built.append(ContractChecked(capacity))
        return built[-1]

    subject = replace(subject_from_class(LRUCachePolicy), build=build)
    small = CostSettings(pinned=20, factor=5, idle=40, idle_for_lengths=120, batch=8,
                         evicted=8, fewest=4, touched=8, rounds=2, samples=2)
    found = measure(subject, small)
    assert len(built) == 5 and len(found) == 9  # two shapes for COST-EVICT-LINEAR
    assert all(m.counts is not None and not m.refused for m in found)


@pytest.mark.parametrize(
    ("name", "profile"),
    [("cost_scan_all", "lru"), ("cost_rescan_per_victim", "lru"),
     ("cost_arc_rescans_per_victim", "arc")],
)
def test_the_slow_policies_are_otherwise_correct(name: str, profile: str) -> None:
    report = run_check(faulty(name), get_profile(profile), budget=2.0, engines=["fast"],
                       capacity=8 if profile == "arc" else 64)
    # (no failure; the fast engine alone leaves other engines' MUSTs unjudged)
    assert not report.failures and not report.errors, [f.requirement for f in report.failures]


class _TouchRescans(LRUCachePolicy[Any, Any]):
    """Right answers; every touched key looks at every other key of the call."""

    def touch(self, keys: Iterable[Hashable]) -> None:
        keys = list(keys)
        for key in keys:
            if sum(other in self.blocks for other in keys) and key in self.blocks:
                super().touch([key])


@pytest.mark.parametrize(("name", "requirement"), [
    ("cost_rescan_per_victim", "COST-EVICT-LINEAR"),
    ("cost_arc_rescans_per_victim", "COST-EVICT-LINEAR"),
])
def test_a_rescan_per_victim_is_superlinear_by_counts(name: str, requirement: str) -> None:
    """What makes the size and fast engines keep their calls short."""
    reason = superlinear(faulty(name))
    assert reason is not None and requirement in reason, reason


def test_a_touch_that_rescans_its_keys_is_superlinear() -> None:
    reason = superlinear(_counting(_TouchRescans))
    assert reason is not None and "COST-TOUCH-LINEAR" in reason, reason


@pytest.mark.parametrize("name", ["lru", "arc", "cost_scan_all"])
def test_linear_policies_are_not_superlinear(name: str) -> None:
    """The references, and a policy that scans every block once per evict
    (linear in the cache, not in n)."""
    reference = REFERENCES.get(name)
    assert superlinear(_counting(reference) if reference else faulty(name)) is None


def test_keys_not_policyspec_s_are_not_judged() -> None:
    """Nothing counts their hashes: no growth is claimed."""
    subject = replace(faulty("cost_rescan_per_victim"), make_key=lambda index: index)
    assert length_growth(subject) == [] and superlinear(subject) is None


class _RaisesOnLongEvicts(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n > 100:
            raise RuntimeError("too many")
        return super().evict(n, protected)


class _HangsOnLongEvicts(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        while n > 100:
            pass
        return super().evict(n, protected)


def test_a_policy_that_raises_in_the_growth_probe_is_left_to_the_engines() -> None:
    """No growth is claimed and nothing escapes: the engines meet the raise
    at their own sizes and report it with a trace."""
    assert length_growth(_counting(_RaisesOnLongEvicts)) == []


def test_a_policy_that_hangs_in_the_growth_probe_is_ended_by_the_call_limit() -> None:
    with Watchdog(0.3):
        assert length_growth(_counting(_HangsOnLongEvicts)) == []


def test_the_growth_probe_runs_once_per_subject(monkeypatch: pytest.MonkeyPatch) -> None:
    """The size and fast engines both ask, in the same worker: the second
    gets the first's answer without calling the policy again."""
    from policyspec.engines import cost

    probed: list[Subject] = []
    real = cost.length_growth

    def counted(subject: Subject) -> list[Measurement]:
        probed.append(subject)
        return real(subject)

    monkeypatch.setattr(cost, "length_growth", counted)
    subject = replace(_counting(_TouchRescans), name="asked twice")
    first, second = superlinear(subject), superlinear(subject)
    assert first is not None and second == first
    assert probed == [subject]
