"""The vllm-manager engine: vLLM 0.33.0's manager (its emulation) under
request traffic, every policy call judged through the Lockstep harness.

The references pass under their profiles, with the store threshold off and
on; the hook faults of tests/faulty/hooks are caught by this engine alone
under the ids their headers name; the same seed gives the same run; the
actions it makes are legal and ones vLLM's manager makes.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_corpus import HOOKS, SEED, read_header, subject_for

from policyspec.adapters import subject_for_class
from policyspec.engines import ENGINES
from policyspec.engines.vllm_manager import (
    ENGINE,
    ManagerProxy,
    example_capacity,
    example_config,
    manager_requirement,
    run_vllm_manager,
)
from policyspec.exits import UsageError
from policyspec.harness import Lockstep
from policyspec.model.actions import Action, by_manager, is_legal
from policyspec.model.step import ProfileModel
from policyspec.profiles import get_profile
from policyspec.reference import ARCCachePolicy, LRU033CachePolicy, LRUCachePolicy
from policyspec.run.context import EngineContext
from policyspec.session import run_check
from policyspec.subject import Subject
from policyspec.vllm.manager import OffloadingManagerEmulation
from policyspec.vllm.traffic import drive


def subject(cls: type) -> Subject:
    return subject_for_class(cls)


EXAMPLES = 12
"""Examples per reference run: every cache size, threshold off and on."""


@pytest.mark.parametrize(("cls", "profile", "order"), [
    (LRU033CachePolicy, "core", None),
    (LRU033CachePolicy, "lru-0.33", "LRU033-EVICT-ORDER"),
    (ARCCachePolicy, "core", None),
    (ARCCachePolicy, "arc", "ARC-EVICT-ORDER"),
], ids=["lru033-core", "lru033-lru-0.33", "arc-core", "arc-arc"])
def test_references_pass_under_their_profiles(cls: type, profile: str, order: str | None) -> None:
    run = run_vllm_manager(EngineContext(subject(cls), get_profile(profile), 60.0, SEED, 64,
                                         count=EXAMPLES))
    assert run.error is None
    assert run.findings == []
    assert run.examples == EXAMPLES
    # A pass is an observation: the hooks were called, evictions compared.
    for rid in ("HOOK-TOTAL", "API-ANY-THREAD", "EVICT-SHAPE", "EVICT-IDENTITY"):
        assert run.checked[rid] > 0, rid
    if order is not None:
        assert run.checked[order] > 0
    assert run.counts["traffic_evicted"] > 0
    assert run.counts["traffic_finishes"] > 0
    assert run.counts["traffic_resets"] > 0


def test_the_store_threshold_runs_off_and_on() -> None:
    run = run_vllm_manager(EngineContext(subject(LRU033CachePolicy), get_profile("lru-0.33"), 60.0,
                                         SEED, 64, count=4))
    assert run.counts["threshold_off_examples"] == 2
    assert run.counts["threshold_on_examples"] == 2
    assert run.counts["stores_skipped_by_threshold"] > 0
    assert any("store threshold off" in note for note in run.details)
    assert run.checked["MANAGER-IDLE-COUNT"] > 0 and run.checked["MANAGER-NO-LOST-DATA"] > 0
    assert run.checked["MANAGER-BLOCK-IDS"] > 0


def test_same_seed_same_run_other_seed_other_run() -> None:
    def once(seed: int) -> tuple[Any, ...]:
        run = run_vllm_manager(EngineContext(subject(LRU033CachePolicy), get_profile("lru-0.33"),
                                             60.0, seed, 64, count=4))
        return run.calls, run.steps, dict(run.counts), dict(run.checked)

    assert once(SEED) == once(SEED)
    assert once(SEED) != once(SEED + 1)


def test_a_finding_is_the_same_for_the_same_seed() -> None:
    header = read_header(HOOKS / "lru033_commits_head_first.py")

    def once() -> tuple[str, tuple[Action, ...]]:
        run = run_vllm_manager(EngineContext(subject_for(header.path), get_profile("lru-0.33"),
                                             5.0, SEED, 64, count=6))
        assert run.findings, "the fault was not found"
        return run.findings[0].requirement, run.findings[0].trace

    first = once()
    assert first == once()
    assert first[0] == "LRU033-EVICT-ORDER"  # the engine's; the report's culprit names the call


def traffic(cls: type, index: int, capacity: int) -> tuple[
        Lockstep, ManagerProxy, OffloadingManagerEmulation]:
    """Example ``index`` of a run played on the reference LRU, by hand."""
    harness = Lockstep(subject(cls), get_profile("lru-0.33"), capacity, observe=False)
    proxy = ManagerProxy(harness)
    manager = OffloadingManagerEmulation(proxy, capacity, store_threshold=1 + index % 2,
                                         enable_events=True, listener=proxy)
    config = example_config(SEED, index, requests=16, resets=True)
    drive(manager, config, req_context_type=proxy.new_context)
    return harness, proxy, manager


def traffic_trace(cls: type, index: int, capacity: int) -> tuple[list[Action], int]:
    """The actions of ``traffic``, and the key offers the threshold kept out."""
    harness, _, manager = traffic(cls, index, capacity)
    return harness.trace, manager.stores_skipped


def test_the_emulation_and_the_harness_agree_on_every_chunk() -> None:
    """The policy holds the harness's blocks, the emulation its own chunks:
    the same ids, the same ref_cnt, never the same object."""
    harness, proxy, manager = traffic(LRU033CachePolicy, 2, 16)
    assert harness.blocks and set(harness.blocks) == set(proxy.chunk_of)
    for k, block in harness.blocks.items():
        chunk = proxy.chunk_of[k]
        assert chunk is not block
        assert (chunk.chunk_id, chunk.ref_cnt) == (block.chunk_id, block.ref_cnt)
    idle = sum(1 for block in harness.blocks.values() if block.ref_cnt == 0)
    assert manager.num_evictable_chunks == idle == len(harness.state.idle)


@pytest.mark.parametrize("index", [0, 1])
def test_the_actions_are_legal_and_made_by_a_manager(index: int) -> None:
    trace, _ = traffic_trace(LRU033CachePolicy, index, 16)
    # The exact model evicts what the reference does (it passes lru-0.33),
    # so its states are the states the actions met.
    model: ProfileModel = get_profile("lru-0.33").model(16)
    ops = set()
    for step, action in enumerate(trace):
        assert is_legal(model.state, action, model.requests), (step, action)
        model = model.after([action])
        ops.add(action[0])
    assert by_manager(trace)
    # Every kind of call 0.33's manager makes, from the traffic.
    assert ops >= {"insert", "finish_store", "remove", "start_read", "end_read", "get", "evict",
                   "clear", "set_positions", "on_store_miss", "on_request_access",
                   "on_request_finished"}
    inserts = [a for a in trace if a[0] == "insert"]
    assert inserts and all(len(a) == 4 for a in inserts)  # R9: with the request


def test_the_threshold_keeps_new_keys_out_of_the_store() -> None:
    _, skipped_off = traffic_trace(LRU033CachePolicy, 0, 16)
    _, skipped_on = traffic_trace(LRU033CachePolicy, 1, 16)
    assert skipped_off == 0 and skipped_on > 0


def test_cache_sizes_cycle_unless_chosen() -> None:
    assert [example_capacity(64, i, False) for i in range(4)] == [16, 32, 64, 16]
    assert {example_capacity(64, i, True) for i in range(4)} == {64}


def test_a_policy_without_hooks_gets_no_call_and_a_note() -> None:
    run = run_vllm_manager(EngineContext(subject(LRUCachePolicy), get_profile("core"), 5.0, SEED,
                                         64))
    assert run.calls == 0 and run.examples == 0 and run.findings == []
    assert any("no request hooks" in note for note in run.notes)


def test_registered_as_a_small_default_engine() -> None:
    engine = ENGINES[ENGINE]
    assert engine.default and engine.only_for is None and engine.needs == "hooks"
    assert engine.share < ENGINES["manager"].share


def test_the_emulations_assertions_map_to_manager_requirements() -> None:
    assert manager_requirement("evictable count below 0") == "MANAGER-IDLE-COUNT"
    assert manager_requirement("chunk b'x' not found in cache") == "MANAGER-NO-LOST-DATA"
    assert manager_requirement("chunk b'x' is not ready for reading") == "MANAGER-NO-LOST-DATA"
    assert manager_requirement("the chunk pool ran dry") == "MANAGER-BLOCK-IDS"
    assert manager_requirement("new cache keys observed after request finalization") is None


# -- the hook corpus, this engine alone ---------------------------------------------------

CATCH_BUDGET = 10.0
def hook_files() -> list[Any]:
    return [pytest.param(path, id=path.stem) for path in sorted(HOOKS.glob("*.py"))]


@pytest.mark.parametrize("path", hook_files())
def test_a_hook_fault_is_caught_by_this_engine_alone(path: Any) -> None:
    header = read_header(path)
    report = run_check(subject_for(path), get_profile(header.profile), budget=CATCH_BUDGET,
                       seed=SEED, engines=(ENGINE,))
    found = {failure.requirement for failure in report.failures}
    assert {failure.engine for failure in report.failures} <= {ENGINE}
    # A fault that breaks two ids (the header's ``also``) may show either first.
    wanted = {header.requirement} | header.also
    assert wanted & found, f"wanted one of {sorted(wanted)}, got {sorted(found)}"


def test_resets_only_where_the_policy_has_clear() -> None:
    assert example_config(SEED, 0, requests=16, resets=False).reset == 0.0
    assert example_config(SEED, 0, requests=16, resets=True).reset > 0.0


def test_the_managers_own_checks_speak_when_the_policys_are_not_fatal() -> None:
    """A store miss that drops an idle chunk: the policy requirement names
    it; with only the manager's checks fatal, the manager's idle count."""
    path = HOOKS / "hook_store_miss_makes_room.py"

    def found(fatal: Any) -> list[str]:
        # 0.33's manager (the policy fits R9 and R10): its traffic reaches it
        run = run_vllm_manager(EngineContext(subject_for(path).fitted("R9"), get_profile("core"),
                                             60.0, SEED, 64, count=8), fatal=fatal)
        assert run.error is None
        return [finding.requirement for finding in run.findings]

    assert found(None) == ["HOOK-KEEPS-MEMBERSHIP"]
    assert "MANAGER-IDLE-COUNT" in found(lambda rid: rid.startswith("MANAGER-"))


def test_a_check_gives_it_no_budget_where_it_would_make_no_call() -> None:
    engines = ("fast", ENGINE)
    seed_lru = run_check(subject(LRUCachePolicy), get_profile("core"), budget=1.0, seed=SEED,
                         engines=engines)
    assert set(seed_lru.stats["engines"]) == {"fast"}
    assert any(note.startswith(f"{ENGINE}: not run") for note in seed_lru.notes)
    lru033 = run_check(subject(LRU033CachePolicy), get_profile("core"), budget=1.0, seed=SEED,
                       engines=engines)
    assert set(lru033.stats["engines"]) == {"fast", ENGINE}
    assert lru033.stats["engines"][ENGINE]["calls"] > 0


def test_choosing_only_engines_that_cannot_run_is_a_usage_error() -> None:
    # A run of no engine would say PASS having made no call.
    for engines, why in (((ENGINE,), "needs the policy's 'hooks' capability"),
                         (("cost",), "runs only under a profile that includes 'cost'")):
        with pytest.raises(UsageError, match=why):
            run_check(subject(LRUCachePolicy), get_profile("core"), budget=1.0, seed=SEED,
                      engines=engines)
