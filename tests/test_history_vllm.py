"""The guard inside the real vLLM 0.33.0 or 0.34.0: vLLM's own
``CPUOffloadingManager`` loads ``policyspec.guard`` by module path
(``cache_policy="GuardPolicy"``, ``cache_policy_module_path``) around the
in-tree LRU and around a faulty policy of the corpus, request traffic runs
(``policyspec.vllm.traffic`` with vLLM's ``ReqContext``), and the recorded histories
are judged: the in-tree LRU's conforms to core, the faulty one fails under
its header's id, and the guard's check mode reports the same id online.
Runs in .ci/vllm.sh (each release); skipped where vLLM does not import.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from vllm_env import installed_release, require_vllm

from policyspec.history.judge import judge_paths
from policyspec.vllm.traffic import TrafficConfig, drive

RELEASE = installed_release(require_vllm("vllm.v1.kv_offload.cpu.manager"))
EXACT = {"0.33": ("lru-0.33", "arc"), "0.34": ("lru-0.34", "arc-0.34")}[RELEASE]
"""The installed release's exact LRU and ARC profiles (judged by default)."""

from vllm.v1.kv_offload.base import ReqContext  # noqa: E402
from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager  # noqa: E402

FAULTY = Path(__file__).parent / "faulty"
IN_TREE = "vllm.v1.kv_offload.cpu.policies.lru:LRUCachePolicy"


def _run(monkeypatch: pytest.MonkeyPatch, target: str, history: Path, mode: str,
         judge: str = "inline") -> object:
    monkeypatch.setenv("POLICYSPEC_GUARD_TARGET", target)
    monkeypatch.setenv("POLICYSPEC_GUARD_MODE", mode)
    monkeypatch.setenv("POLICYSPEC_GUARD_JUDGE", judge)
    monkeypatch.setenv("POLICYSPEC_GUARD_HISTORY", str(history))
    logging.getLogger("policyspec.guard").setLevel(logging.CRITICAL)
    manager = CPUOffloadingManager(16, cache_policy="GuardPolicy",
                                   cache_policy_module_path="policyspec.guard",
                                   enable_events=True)
    guard = manager._policy
    assert type(guard).__name__ == "GuardPolicy"
    try:
        drive(manager, TrafficConfig(seed=5, requests=300,
                                     touch=TrafficConfig.touch if RELEASE == "0.33" else 0.0),
              req_context_type=ReqContext)
    except AssertionError:
        pass  # vLLM's own asserts stop a faulty policy's run; the history has it all
    finally:
        guard.close()
    return guard


def _show(capsys: pytest.CaptureFixture[str], line: str) -> None:
    with capsys.disabled():
        print(f"\n  {line}")


def test_the_in_tree_lru_under_the_guard_conforms_to_core_and_its_exact_lru(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = tmp_path / "lru.jsonl"
    guard = _run(monkeypatch, IN_TREE, history, "check")
    assert not guard.violations  # type: ignore[attr-defined]
    verdict = judge_paths([history])
    found = {p.profile: p for p in verdict.profiles}
    assert verdict.calls > 5000
    assert verdict.passed, (found["core"].first, verdict.caller)
    lru, arc = EXACT
    assert found[lru].conforms, found[lru].first
    assert found[arc].first is not None  # not an ARC, and the judge sees it
    assert verdict.exercised["EVICT-EXACT-N"] > 0
    _show(capsys, f"guard around vLLM {RELEASE}'s in-tree LRU in the real CPUOffloadingManager: "
          f"{verdict.calls:,} calls recorded, {verdict.exercised['EVICT-EXACT-N']:,} evictions; "
          + "; ".join(f"{p.profile}: {'conforms' if p.conforms else 'no, ' + p.first.requirement}"
                      for p in verdict.profiles if p.judged or p.first))


@pytest.mark.parametrize("judge", ["inline", "process"])
@pytest.mark.parametrize(("stem", "requirement"), [
    ("v01_ignores_protected", "EVICT-UNPROTECTED"),
    ("v09_evicts_in_flight_first", "EVICT-IDLE-ONLY"),
])
def test_a_faulty_policy_under_the_guard_fails_under_its_id_online_and_offline(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, stem: str, requirement: str, judge: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Online in check mode, its judge inline or in a second process
    (POLICYSPEC_GUARD_JUDGE), and offline from the history: the same first
    violation."""
    history = tmp_path / "faulty.jsonl"
    guard = _run(monkeypatch, f"{FAULTY / stem}.py:Policy", history, "check", judge)
    online = [v for v in guard.violations if v.kind == "policy"]  # type: ignore[attr-defined]
    assert online and online[0].requirement == requirement
    core = judge_paths([history], ("core",)).profiles[0]
    assert core.first is not None and core.first.requirement == requirement
    assert core.first.call == online[0].call
    _show(capsys, f"guard around {stem} in the real CPUOffloadingManager: online ({judge}) "
          f"{online[0].requirement} at call {online[0].call:,} ({len(online)} violations), "
          f"check-history core: no, {core.first.requirement} at call {core.first.call:,}")
