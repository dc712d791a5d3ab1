"""Serving traces against the real vLLM 0.33.0 or 0.34.0 (run by .ci/vllm.sh):
vLLM's own LRU and ARC pass the trace engine on the bundled sample, and
vLLM's real ``CPUOffloadingManager`` played the sample by
``workload.player`` makes the same policy calls, and gets the same hits,
as the emulation around the same policy class."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from vllm_env import installed_release, require_vllm

from policyspec.adapters import load_subject
from policyspec.profiles import get_profile
from policyspec.reports.report import NOT_TESTED, PASS
from policyspec.session import CheckOptions, run_check
from policyspec.vllm.manager import OffloadingManagerEmulation
from policyspec.vllm.recorder import KeyNames, RecordingPolicy
from policyspec.workload.player import PlayCounts, play
from policyspec.workload.reader import read_trace
from policyspec.workload.sample import sample_path

require_vllm("vllm.v1.kv_offload.cpu.manager")

from vllm.v1.kv_offload.base import ReqContext  # noqa: E402
from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager  # noqa: E402
from vllm.v1.kv_offload.cpu.policies.arc import ARCCachePolicy  # noqa: E402
from vllm.v1.kv_offload.cpu.policies.base import ChunkStatus  # noqa: E402
from vllm.v1.kv_offload.cpu.policies.lru import LRUCachePolicy  # noqa: E402

RELEASE = installed_release(sys.modules["vllm"])
PROFILES = {"0.33": ("lru-0.33", "arc"), "0.34": ("lru-0.34", "arc-0.34")}[RELEASE]


@pytest.mark.parametrize(("target", "profile"), [
    ("vllm.v1.kv_offload.cpu.policies.lru:LRUCachePolicy", PROFILES[0]),
    ("vllm.v1.kv_offload.cpu.policies.arc:ARCCachePolicy", PROFILES[1]),
], ids=["vllm-lru", "vllm-arc"])
def test_vllms_own_policies_pass_the_trace_engine(target: str, profile: str) -> None:
    """The manager playing a trace never removes, touches, clears or evicts
    zero blocks, so the trace engine alone leaves MUSTs of those calls (and
    the cost ones) unjudged: the verdict is then UNJUDGED, never PASS. Every
    requirement it reaches passes, eviction order among them."""
    report = run_check(load_subject(target), get_profile(profile), options=CheckOptions(
        budget=4.0, engines=("trace",), jobs=1))
    assert report.failures == [] and report.errors == []
    assert any("requests of the bundled synthetic sample" in note for note in report.notes)
    unjudged = {r.id for r in report.requirements
                if r.level == "MUST" and r.applies and r.status == NOT_TESTED}
    assert {"REMOVE-DROPS", "CLEAR-EMPTIES"} <= unjudged
    assert report.verdict == "unjudged", report.verdict_reason
    judged = {r.id for r in report.requirements if r.status == PASS and r.checks > 0}
    assert {"EVICT-IDLE-ONLY", "INSERT-ADDS"} <= judged
    assert any(rid.startswith(("LRU", "ARC")) and "EVICT" in rid for rid in judged), judged


def _played(manager_of: Any, cls: type, size: int) -> tuple[PlayCounts, list[Any]]:
    names = KeyNames()
    policy = RecordingPolicy(cls(cache_capacity=size), names)
    counts = play(manager_of(policy, size), list(read_trace(sample_path()))[:300],
                  new_context=ReqContext)
    return counts, policy.calls


def _real(policy: Any, size: int) -> Any:
    manager = CPUOffloadingManager(size, cache_policy="lru")
    manager._policy = policy
    return manager


def _emulated(policy: Any, size: int) -> Any:
    return OffloadingManagerEmulation(policy, size, chunk_type=ChunkStatus, release=RELEASE)


@pytest.mark.parametrize("cls", [LRUCachePolicy, ARCCachePolicy], ids=["lru", "arc"])
@pytest.mark.parametrize("size", [32, 512])
def test_the_real_manager_and_the_emulation_play_the_sample_alike(cls: type, size: int) -> None:
    real, real_calls = _played(_real, cls, size)
    emulated, emulated_calls = _played(_emulated, cls, size)
    assert real == emulated
    assert real_calls == emulated_calls
    assert real.blocks_evicted > 0 if size == 32 else real.hit_blocks > 0
