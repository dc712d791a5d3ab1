"""The metamorphic engine: the reference LRU and a seeded-random policy
keep every relation, a faulty policy per relation is caught under core with
the relation's requirement id on a shrunk trace, and a policy that is not
deterministic gets the relations as not applicable, never a failure."""

from __future__ import annotations

import random
import re
from collections.abc import Collection
from typing import Any

import pytest

from policyspec.engines import ENGINES
from policyspec.engines.metamorphic import RELATIONS, run_metamorphic
from policyspec.profiles import get_profile
from policyspec.reference import LRUCachePolicy
from policyspec.run.context import EngineContext
from policyspec.subject import subject_from_class

CORE = get_profile("core")
RELATION_IDS = {r.requirement for r in RELATIONS}
PRESENCE_IDS = {r.presence for r in RELATIONS if r.presence}


class GetPromotes(LRUCachePolicy[Any, Any]):
    """get counts as a use: the key becomes the most recent idle key."""

    def get(self, key: Any) -> Any:
        if key in self.evictable_blocks:
            self.evictable_blocks.move_to_end(key)
        return super().get(key)


class TouchAbsentRotates(LRUCachePolicy[Any, Any]):
    """A touch naming an unknown key re-ranks: the least recent idle key
    goes to the most recent end."""

    def touch(self, keys: Any) -> None:
        keys = list(keys)
        super().touch(keys)
        if any(k not in self.blocks for k in keys) and self.evictable_blocks:
            self.evictable_blocks.move_to_end(next(iter(self.evictable_blocks)))


class ZeroEvictRotates(LRUCachePolicy[Any, Any]):
    """evict(0) answers [] but first rotates the idle order by one."""

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0 and self.evictable_blocks:
            self.evictable_blocks.move_to_end(next(iter(self.evictable_blocks)))
        return super().evict(n, protected)


class ZeroEvictNone(LRUCachePolicy[Any, Any]):
    """evict(0) answers None (refused) instead of []."""

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        return None if n == 0 else super().evict(n, protected)


class CountsProtected(LRUCachePolicy[Any, Any]):
    """Picks from the most recent end when the protected set is large,
    whether or not its keys are present."""

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if len(protected) < 3 or n == 0:
            return super().evict(n, protected)
        chosen = [k for k in reversed(self.evictable_blocks) if k not in protected][:n]
        if len(chosen) < n:
            return None
        for k in chosen:
            del self.evictable_blocks[k]
        return [(k, self.blocks.pop(k)) for k in chosen]


class FailedScanReranks(LRUCachePolicy[Any, Any]):
    """A failed scan moves the candidates it found to the most recent end
    before answering None (presence untouched)."""

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        found = [k for k in self.evictable_blocks if k not in protected][:n]
        if len(found) < n:
            for k in found:
                self.evictable_blocks.move_to_end(k)
            return None
        return super().evict(n, protected)


class ClearKeepsCounter(LRUCachePolicy[Any, Any]):
    """Counts its clears and never resets the count: once cleared, touch
    walks the keys the other way (the last key ends up most recent)."""

    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.clears = 0

    def clear(self) -> None:
        super().clear()
        self.clears += 1

    def touch(self, keys: Any) -> None:
        keys = list(keys)
        super().touch(reversed(keys) if self.clears else keys)


class SeededRandom(LRUCachePolicy[Any, Any]):
    """A correct policy that evicts idle keys in a random order drawn from
    its own generator (seeded, and reseeded by clear: deterministic)."""

    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.rng = random.Random(0)

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        eligible = [k for k in self.evictable_blocks if k not in protected]
        if len(eligible) < n:
            return None
        chosen = self.rng.sample(eligible, n)
        for k in chosen:
            del self.evictable_blocks[k]
        return [(k, self.blocks.pop(k)) for k in chosen]

    def clear(self) -> None:
        super().clear()
        self.rng = random.Random(0)


class RandomSurvivesClear(SeededRandom):
    """Correct: the generator goes on where it stopped after a
    reset, so the policy differs from a fresh one only by it."""

    def clear(self) -> None:
        LRUCachePolicy.clear(self)


class ClearKeepsOrder(LRUCachePolicy[Any, Any]):
    """clear empties the blocks but keeps the order structure: a key stored
    again after the reset takes its old place (evict skips the leftovers)."""

    def clear(self) -> None:
        self.blocks.clear()

    def insert(self, key: Any, block: Any) -> None:
        self.blocks[key] = block
        if block.ref_cnt == 0:
            self.evictable_blocks[key] = None

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        chosen = [k for k in self.evictable_blocks
                  if k in self.blocks and self.blocks[k].ref_cnt == 0 and k not in protected][:n]
        if len(chosen) < n:
            return None
        for k in chosen:
            del self.evictable_blocks[k]
        return [(k, self.blocks.pop(k)) for k in chosen]

    def mark_non_evictable(self, key: Any) -> None:
        self.evictable_blocks.pop(key, None)


class TouchLeavesOrphans(LRUCachePolicy[Any, Any]):
    """spec/bugs.md V14: a touched absent key enters the order; evict then meets
    the orphan and raises KeyError."""

    def touch(self, keys: Any) -> None:
        for key in reversed(list(keys)):
            if key in self.evictable_blocks:
                self.evictable_blocks.move_to_end(key)
            elif key not in self.blocks:
                self.evictable_blocks[key] = None


class GlobalRandom(SeededRandom):
    """Draws from the process-wide generator, which every check seeds per
    policy instance (policyspec.environment): deterministic under a check."""

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        self.rng = random  # type: ignore[assignment]
        return super().evict(n, protected)


class EntropyRandom(SeededRandom):
    """Draws from the operating system's entropy, which no seed controls:
    not deterministic."""

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        self.rng = random.SystemRandom()
        return super().evict(n, protected)


def run(policy: type, examples: int) -> Any:
    """A run bounded by its number of sequences, not by time (the same on a
    busy machine)."""
    return run_metamorphic(EngineContext(subject_from_class(policy), CORE, 60.0, 0, 64,
                                         count=examples))


def test_metamorphic_engine_is_registered() -> None:
    assert ENGINES["metamorphic"].share == 0.2


@pytest.mark.parametrize("policy", [LRUCachePolicy, SeededRandom])
def test_deterministic_correct_policies_keep_every_relation(policy: type) -> None:
    result = run(policy, 3)
    assert result.findings == [], result.findings[0].message
    assert result.not_applicable == {}
    assert result.examples == 3
    assert result.calls > 1000 and result.steps > 1000
    for rid in RELATION_IDS:
        assert result.checked[rid] == result.examples


@pytest.mark.parametrize(
    ("policy", "requirement"),
    [
        (GetPromotes, "GET-PURE"),
        (TouchAbsentRotates, "TOUCH-ABSENT-NEUTRAL"),
        (ZeroEvictRotates, "EVICT-ZERO"),
        (ZeroEvictNone, "EVICT-ZERO"),
        (CountsProtected, "EVICT-PROTECTED-ABSENT-NEUTRAL"),
        (FailedScanReranks, "EVICT-ATOMIC"),
        (ClearKeepsCounter, "CLEAR-FRESH"),
        (ClearKeepsOrder, "CLEAR-FORGETS-KEYS"),
    ],
)
def test_faulty_policy_breaks_its_relation(policy: type, requirement: str) -> None:
    result = run(policy, 6)
    found = {f.requirement: f for f in result.findings}
    assert requirement in found, (sorted(found), result.notes)
    finding = found[requirement]
    assert finding.shrunk
    assert len(finding.trace) <= 40, finding.trace
    assert "gave" in finding.message
    assert not set(found) - RELATION_IDS - PRESENCE_IDS, sorted(found)
    # Steps are counted as printed: the step named is the trace's last one.
    named = re.search(r"step (\d+) \(", finding.message)
    assert named and int(named.group(1)) == len(finding.trace), (finding.message, finding.trace)


def test_a_generator_that_survives_clear_breaks_only_the_should_clear_fresh() -> None:
    result = run(RandomSurvivesClear, 4)
    assert {f.requirement for f in result.findings} == {"CLEAR-FRESH"}, result.findings
    assert result.checked["CLEAR-FORGETS-KEYS"] == result.examples
    assert "renamed" not in result.findings[0].message


def test_clear_forgets_keys_compares_with_the_renamed_history() -> None:
    result = run(ClearKeepsOrder, 6)
    finding = next(f for f in result.findings if f.requirement == "CLEAR-FORGETS-KEYS")
    assert "the same history with its keys renamed" in finding.message
    assert ("clear",) in finding.trace


def test_a_should_relation_reports_the_must_a_difference_breaks() -> None:
    # The orphans make a later evict raise: API-NO-RAISE, not the SHOULD.
    result = run(TouchLeavesOrphans, 6)
    found = {f.requirement for f in result.findings}
    assert "API-NO-RAISE" in found, (sorted(found), result.notes)
    for finding in result.findings:
        if "raised" in finding.message.split(";")[0]:
            assert finding.requirement == "API-NO-RAISE", finding.message


def test_non_deterministic_policy_gets_not_applicable_not_a_failure() -> None:
    result = run(EntropyRandom, 3)
    assert result.findings == []
    assert set(result.not_applicable) == RELATION_IDS
    assert "deterministic" in next(iter(result.not_applicable.values()))


def test_a_policy_drawing_from_the_global_generator_is_judged() -> None:
    """Issue 28: ``random``'s global generator is seeded per policy
    instance, so the relations apply to a policy that draws from it."""
    result = run(GlobalRandom, 3)
    assert result.not_applicable == {}
    assert all(result.checked[rid] > 0 for rid in RELATION_IDS - {"CLEAR-FRESH"})
    assert {f.requirement for f in result.findings} <= {"CLEAR-FRESH"}


def test_clear_fresh_is_skipped_without_clear() -> None:
    subject = subject_from_class(LRUCachePolicy)
    subject = type(subject)(subject.name, subject.build, capabilities=frozenset({"mark"}))
    result = run_metamorphic(EngineContext(subject, CORE, 60.0, 0, 64, count=1))
    assert "CLEAR-FRESH" not in result.checked
    assert result.checked["GET-PURE"] > 0
