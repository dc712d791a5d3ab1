"""The manager-level engine: the reference LRU conforms under manager
traffic, large states are reached, and each manager check can fail on a
policy that breaks it (with the harness's policy-level checks made
non-fatal, so that the manager check is the one that speaks)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import pytest

from policyspec.engines import ENGINES
from policyspec.engines.manager_machine import ManagerMachine, request_keys, run_manager
from policyspec.findings.finish import finish
from policyspec.harness.watchdog import Watchdog
from policyspec.profiles import get_profile
from policyspec.reference import LRUCachePolicy
from policyspec.run.context import EngineContext
from policyspec.subject import subject_from_class

CORE = get_profile("core")
LRU = get_profile("lru")
REFERENCE = subject_from_class(LRUCachePolicy)


def manager_only(requirement: str) -> bool:
    """Fatal only for the manager's own requirements."""
    return requirement.startswith("MANAGER")


class EvictsInFlight(LRUCachePolicy[Any, Any]):
    """spec/bugs.md V9: a "prefetch" first pass that evicts blocks still being
    stored (ref_cnt -1) before the idle ones."""

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        chosen = [k for k, b in self.blocks.items() if b.ref_cnt <= 0 and k not in protected]
        if len(chosen) < n:
            return None
        in_flight_first = sorted(chosen, key=lambda k: self.blocks[k].ref_cnt)[:n]
        result = [(k, self.blocks.pop(k)) for k in in_flight_first]
        for k, _ in result:
            self.evictable_blocks.pop(k, None)
        return result


class EvictsBeingRead(LRUCachePolicy[Any, Any]):
    """Evicts a block being read (ref_cnt > 0) before the idle ones."""

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        read = [k for k, b in self.blocks.items() if b.ref_cnt > 0 and k not in protected]
        if n == 0 or not read:
            return super().evict(n, protected)
        rest = super().evict(n - 1, {*protected, read[0]})
        if rest is None:
            return None
        return [(read[0], self.blocks.pop(read[0])), *rest]


class SilentlyDropsIdle(LRUCachePolicy[Any, Any]):
    """A touch that quietly forgets the least recent idle block (a leak: the
    manager still counts it as idle and still owns its id)."""

    def touch(self, keys: Any) -> None:
        super().touch(keys)
        if len(self.evictable_blocks) > 3:
            key, _ = self.evictable_blocks.popitem(last=False)
            del self.blocks[key]


class EvictsAlienId(LRUCachePolicy[Any, Any]):
    """Returns each victim with a copy of its block whose id is off by one,
    so the manager frees an id that belongs to another block."""

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        result = super().evict(n, protected)
        if not result:
            return result
        key, block = result[0]
        alien = type(block)(block.ref_cnt, block.block_id + 1)
        return [(key, alien), *result[1:]]


def test_requests_share_prefixes_and_never_collide() -> None:
    a, b = request_keys(2, 0, 24), request_keys(2, 1, 24)
    trunk = 4 + 6 * 2
    assert a[:trunk] == b[:trunk]
    assert not set(a[trunk:]) & set(b[trunk:])
    every = [request_keys(f, br, 24) for f in range(4) for br in range(3)]
    for keys in every:
        assert len(set(keys)) == len(keys)
    assert request_keys(3, 2, 24)[-1] < 400


def test_reference_lru_conforms_under_manager_traffic() -> None:
    for profile in (CORE, LRU):
        run = run_manager(EngineContext(REFERENCE, profile, 1.0, 0, 64))
        assert run.findings == [], run.findings[0].message
        assert run.steps > 1000
        for rid in ("MANAGER-BLOCK-IDS", "MANAGER-IDLE-COUNT", "MANAGER-NO-LOST-DATA"):
            assert run.checked[rid] > 0, rid


def test_manager_machine_reaches_large_states(monkeypatch: pytest.MonkeyPatch) -> None:
    largest = {"held": 0, "idle": 0}
    audit = ManagerMachine._audit

    def measuring(self: ManagerMachine) -> None:
        audit(self)
        largest["held"] = max(largest["held"], len(self.held))
        largest["idle"] = max(largest["idle"], self.idle_count)

    monkeypatch.setattr(ManagerMachine, "_audit", measuring)
    run_manager(EngineContext(REFERENCE, CORE, 1.0, 1, 64))
    assert largest["held"] >= 40
    assert largest["idle"] >= 40


def test_manager_engine_is_registered() -> None:
    assert ENGINES["manager"].share == 0.25


def never(requirement: str) -> bool:
    """Nothing is fatal: every failure is recorded and the run goes on."""
    return False


@pytest.mark.parametrize(
    ("policy", "requirements"),
    [
        (EvictsInFlight, {"MANAGER-NO-LOST-DATA", "MANAGER-BLOCK-IDS", "MANAGER-IDLE-COUNT"}),
        (EvictsBeingRead, {"MANAGER-NO-LOST-DATA"}),
        (SilentlyDropsIdle, {"MANAGER-IDLE-COUNT"}),
        (EvictsAlienId, {"MANAGER-BLOCK-IDS"}),
    ],
)
def test_manager_checks_fail_when_the_policy_breaks_them(
    policy: type, requirements: set[str]
) -> None:
    run = run_manager(EngineContext(subject_from_class(policy), CORE, 1.0, 0, 16), fatal=never)
    found = {f.requirement for f in run.findings}
    assert requirements <= found, found


def test_policy_level_check_fires_first_by_default() -> None:
    run = run_manager(EngineContext(subject_from_class(EvictsInFlight), CORE, 2.0, 0, 16))
    assert [f.requirement for f in run.findings] == ["EVICT-IDLE-ONLY"]
    assert run.findings[0].trace


def test_manager_failure_is_minimised_through_a_lenient_harness() -> None:
    # The engine generates only; findings.finish minimises, replaying a
    # manager finding with the manager's bookkeeping (findings/manager_replay.py).
    subject = subject_from_class(EvictsInFlight)
    run = run_manager(EngineContext(subject, CORE, 2.0, 0, 16), fatal=manager_only)
    found = {f.requirement for f in run.findings}
    assert "EVICT-IDLE-ONLY" in found  # recorded, not raised
    [raw] = [f for f in run.findings if f.requirement.startswith("MANAGER")]
    with Watchdog(0) as watchdog:
        failures = finish(subject, CORE, [run], capacity=16, seed=0, watchdog=watchdog,
                          tries=300)
    [minimal] = [f for f in failures if f.requirement == raw.requirement]
    assert 0 < len(minimal.trace) < len(raw.trace), (len(minimal.trace), len(raw.trace))
