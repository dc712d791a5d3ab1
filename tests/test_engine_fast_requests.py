"""The fast engine's request traffic (sources/request_source.py): vLLM
0.33's manager with requests and hooks, where the subject has them.

Its actions stay inside the caller contract with the requests it opened,
the driver moves like the harness on them, the reference policies pass,
the same seed gives the same actions, and the hook faults of
tests/faulty/hooks/ that core catches are caught by the fast engine alone
under their ids (the corpus headers name the stateful engine, which the
corpus test runs; these runs are the fast engine's own).

Speed itself is measured by ``python -m benchmarks --only engines``, never
asserted here.
"""

from __future__ import annotations

import importlib.util
import random
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.engine_speed import SeedLRUAtR9
from policyspec.adapters import subject_for_class
from policyspec.engines.fast import SMALL_CAPACITY, run_fast
from policyspec.engines.fast_driver import Driver
from policyspec.harness import Lockstep
from policyspec.harness.keymap import KeyMap
from policyspec.model.actions import is_legal
from policyspec.model.state import IDLE, IN_FLIGHT
from policyspec.profiles import get_profile
from policyspec.reference import LRU033CachePolicy, LRUCachePolicy
from policyspec.registry import load_registry
from policyspec.run.context import EngineContext
from policyspec.session import run_check
from policyspec.sources.action_source import Run, actions_of
from policyspec.sources.request_source import RequestSource
from policyspec.subject import Subject
from policyspec.witness.reproduce import failure_of

HOOKS = Path(__file__).parent / "faulty" / "hooks"
LRU_R9 = subject_for_class(SeedLRUAtR9, api="R9")
LRU_033 = subject_for_class(LRU033CachePolicy).fitted("R9")  # 0.33: with touch
CORE = get_profile("core")
SEED = 20240611


def faulty(stem: str) -> Subject:
    spec = importlib.util.spec_from_file_location(f"fast_hooks_{stem}", HOOKS / f"{stem}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return subject_for_class(module.Policy)


# -- the traffic --------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_request_traffic_stays_inside_the_caller_contract(seed: int) -> None:
    """Every action, in the state and with the requests the actions before
    it left, is legal (``is_legal`` with the model's requests), through the
    exact lru-0.33 model on its reference (a clear now and then: weights
    with more of them); and the traffic is the manager's: misses, accesses,
    finishes, inserts with a request, a clear."""
    weights = (200, 200, 15, 80, 90, 20, 100, 60, 30, 25)
    source = RequestSource(random.Random(seed), pool=24, capacity=16, weights=weights)
    harness = Lockstep(LRU_033, get_profile("lru-0.33"), 16, observe=False, threads=False)
    seen: Counter[str] = Counter()
    for _ in range(1500):
        for action in actions_of(source.draw(harness.state)):
            assert is_legal(harness.state, action, harness.model.requests), action
            seen[action[0] if action[0] != "insert" else f"insert/{len(action)}"] += 1
            harness.apply(action)
    assert not harness.soft
    wanted = ("on_store_miss", "on_request_access", "on_request_finished", "set_positions",
              "insert/4", "clear", "evict", "get", "start_read", "end_read", "finish_store")
    assert all(seen[op] > 0 for op in wanted), seen


def test_finishes_report_reused_and_inserted_keys_and_requests_span_a_clear() -> None:
    """What makes the hook faults show: finishes with keys in flight, with
    reused keys and keys only inserted, and requests open across a clear."""
    weights = (200, 200, 15, 80, 90, 20, 100, 60, 30, 25)
    source = RequestSource(random.Random(1), pool=24, capacity=16, weights=weights)
    harness = Lockstep(LRU_R9, CORE, 16, observe=False, threads=False)
    in_flight = reused = only = spanning = 0
    touched: dict[int, int] = {}
    clears = 0
    for _ in range(3000):
        for action in actions_of(source.draw(harness.state)):
            op = action[0]
            if op == "clear":
                clears += 1
            elif op in ("on_store_miss", "on_request_access"):
                if touched.setdefault(action[1], clears) != clears:
                    spanning += 1
            elif op == "on_request_finished":
                refs = harness.state.refs
                in_flight += any(refs.get(k, IDLE) != IDLE for k in action[2][0])
                reused += bool(action[4])
                only += bool(action[3])
            harness.apply(action)
    assert in_flight and reused and only and spanning, (in_flight, reused, only, spanning)


@pytest.mark.parametrize("subject", [LRU_R9, LRU_033], ids=["lru@R9", "lru-0.33"])
def test_the_driver_moves_like_the_harness_on_request_runs(subject: Subject) -> None:
    """The code that runs: each run through the driver (policy calls,
    inline oracle writes, checks) and, spelled out, through the full
    harness on a second policy (which judges every call); after each run
    both hold the same core state."""
    keymap = KeyMap(subject.make_key)
    source = RequestSource(random.Random(3), pool=24, capacity=16)
    driver = Driver(subject, 16, keymap.reals(range(source.pool + 4)), keymap.index, None)
    harness = Lockstep(subject, CORE, 16, threads=False)
    for _ in range(800):
        drawn: Run = source.draw(driver.oracle)
        Driver.HANDLERS[drawn[0]](driver, drawn)
        harness.run(actions_of(drawn))
        assert driver.oracle.to_state() == harness.state, drawn
    driver.sweep()
    assert driver.hooks > 50 and driver.evicted > 10 and not harness.soft


def test_the_same_seed_gives_the_same_request_actions() -> None:
    def actions(seed: int) -> list[tuple[object, ...]]:
        keymap = KeyMap(LRU_033.make_key)
        source = RequestSource(random.Random(seed), pool=96, capacity=64)
        driver = Driver(LRU_033, 64, keymap.reals(range(100)), keymap.index, None)
        out: list[tuple[object, ...]] = []
        for _ in range(400):
            drawn = source.draw(driver.oracle)
            Driver.HANDLERS[drawn[0]](driver, drawn)
            out.extend(actions_of(drawn))
        return out

    first = actions(5)
    assert first == actions(5) and first != actions(6)
    assert any(a[0] == "on_request_finished" for a in first)


# -- the engine ------------------------------------------------------------------------------


@pytest.mark.parametrize("subject", [LRU_R9, LRU_033], ids=["lru@R9", "lru-0.33"])
def test_the_reference_policies_pass_with_request_traffic(subject: Subject) -> None:
    run = run_fast(EngineContext(subject, CORE, 0, 0, 64, count=30))
    assert not run.findings and run.error is None
    checked = run.checked
    assert checked["HOOK-TOTAL"] > 500 and checked["HOOK-KEEPS-MEMBERSHIP"] > 500
    assert checked["API-ANY-THREAD"] > 1000 and checked["EVICT-LIVENESS"] > 100


def test_a_subject_without_hooks_keeps_the_seed_traffic() -> None:
    run = run_fast(EngineContext(subject_for_class(LRUCachePolicy), CORE, 0, 0, 64, count=5))
    assert not run.findings and run.checked["HOOK-TOTAL"] == 0
    assert run.checked["API-ANY-THREAD"] == 0


CAUGHT = [
    ("hook_store_miss_makes_room", "HOOK-KEEPS-MEMBERSHIP"),
    ("hook_access_pins_keys", "HOOK-KEEPS-MEMBERSHIP"),
    ("hook_access_raises_on_absent", "HOOK-TOTAL"),
    ("hook_finish_raises_on_in_flight", "HOOK-TOTAL"),
    ("hook_chunks_per_thread", "API-ANY-THREAD"),
    # Its header says profile=arc (its design); the raise is core's.
    ("hook_store_miss_needs_a_list", "HOOK-TOTAL"),
]
"""The hook faults core catches (their headers; the rest need lru-0.33 or
arc), with the id each must be reported under."""


@pytest.mark.parametrize(("stem", "requirement"), CAUGHT, ids=[c[0] for c in CAUGHT])
def test_the_fast_engine_alone_catches_the_core_hook_faults(stem: str, requirement: str) -> None:
    report = run_check(faulty(stem), CORE, budget=3.0, engines=["fast"], seed=SEED)
    registry = load_registry()
    musts = {f.requirement for f in report.failures if registry[f.requirement].level == "MUST"}
    assert musts == {requirement}, [(f.requirement, f.message) for f in report.failures]
    assert not report.errors, report.errors


def test_a_hook_fault_gives_the_same_finding_for_the_same_seed() -> None:
    subject = faulty("hook_finish_raises_on_in_flight")
    first, again = (run_check(subject, CORE, budget=2.0, seed=7, engines=("fast",),
                              capacity=64) for _ in range(2))
    assert first.failures and first.failures[0].requirement == "HOOK-TOTAL", first.failures
    assert [(f.requirement, f.trace) for f in first.failures] == [
        (f.requirement, f.trace) for f in again.failures]
    assert any("on_request_finished" in step for step in first.failures[0].trace)


def test_inserts_carry_their_request_in_flight_or_idle() -> None:
    source = RequestSource(random.Random(2), pool=24, capacity=16)
    harness = Lockstep(LRU_R9, CORE, 16, observe=False, threads=False)
    refs: Counter[int] = Counter()
    for _ in range(1500):
        for action in actions_of(source.draw(harness.state)):
            if action[0] == "insert":
                assert len(action) == 4
                refs[action[2]] += 1
            harness.apply(action)
    assert refs[IN_FLIGHT] > 10 * refs[IDLE] > 0


def test_a_full_cache_hook_fault_is_found_at_the_small_capacity_unless_it_is_fixed() -> None:
    """Every other example of request traffic runs at SMALL_CAPACITY, and
    its finding says so: its trace fails there (the report replays it
    there); a fixed capacity keeps every example at it. (How short the
    engine's own shrinking gets depends on the machine: it is bounded in
    time; the report's minimiser goes on.)"""
    subject = faulty("hook_store_miss_makes_room")
    small = run_fast(EngineContext(subject, CORE, 2.0, 0, 64))
    assert [f.capacity for f in small.findings] == [SMALL_CAPACITY]
    failure = failure_of(subject, CORE, SMALL_CAPACITY, small.findings[0].trace)
    assert failure is not None and failure.requirement == "HOOK-KEEPS-MEMBERSHIP"
    fixed = run_fast(EngineContext(subject, CORE, 2.0, 0, 64, capacity_fixed=True))
    assert fixed.findings and all(f.capacity is None for f in fixed.findings)
    assert sum(a[0] == "insert" for a in fixed.findings[0].trace) >= 64  # a full cache of 64
