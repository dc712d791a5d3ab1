"""The metamorphic engine: the reference LRU and a seeded-random policy
keep every relation, a faulty policy per relation is caught under core with
the relation's requirement id on a shrunk trace, and a policy that is not
deterministic gets the relations as not applicable, never a failure."""

from __future__ import annotations

import random
from collections.abc import Collection
from typing import Any

import pytest

from policyspec.engines import ENGINES
from policyspec.engines.metamorphic import RELATIONS, run_metamorphic
from policyspec.profiles import get_profile
from policyspec.reference import LRUCachePolicy
from policyspec.subject import subject_from_class

CORE = get_profile("core")
RELATION_IDS = {r.requirement for r in RELATIONS}


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


class GlobalRandom(SeededRandom):
    """Draws from the process-wide generator: not deterministic."""

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        self.rng = random  # type: ignore[assignment]
        return super().evict(n, protected)


def run(policy: type, examples: int) -> Any:
    """A run bounded by its number of sequences, not by time (the same on a
    busy machine)."""
    return run_metamorphic(subject_from_class(policy), CORE, 60.0, 0, 64, examples=examples)


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
    assert not set(found) - RELATION_IDS, sorted(found)


def test_non_deterministic_policy_gets_not_applicable_not_a_failure() -> None:
    result = run(GlobalRandom, 3)
    assert result.findings == []
    assert set(result.not_applicable) == RELATION_IDS
    assert "deterministic" in next(iter(result.not_applicable.values()))


def test_clear_fresh_is_skipped_without_clear() -> None:
    subject = subject_from_class(LRUCachePolicy)
    subject = type(subject)(subject.name, subject.build, capabilities=frozenset({"mark"}))
    result = run_metamorphic(subject, CORE, 60.0, 0, 64, examples=1)
    assert "CLEAR-FRESH" not in result.checked
    assert result.checked["GET-PURE"] > 0
