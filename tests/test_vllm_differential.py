"""Differential runs against the real vLLM 0.33.0 or 0.34.0 (run by
.ci/vllm.sh in each release's venv); the emulation, the traffic and the
references are those of the installed release.

1. The real ``CPUOffloadingManager`` and policyspec's emulation of it
   (policyspec.vllm.manager), each around a recording proxy of the same
   policy class (vLLM's own LRU and ARC, policyspec's references), driven
   by the same request traffic (policyspec.vllm.traffic): the recorded
   policy calls (operation, thread, arguments with keys as small ids and
   container types, results) and the final eviction order must be equal.
2. Each reference beside vLLM's own policy, both through the emulation on
   the same traffic: every call's result (evict's victims and their order,
   get's chunk) and the final eviction order must be equal.

The real manager builds its policy by name; the test then puts the
recording proxy in its place (the manager's ``_policy``), before any call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from vllm_env import installed_release, require_vllm

from policyspec.reference import ARC034CachePolicy, LRU033CachePolicy, LRU034CachePolicy
from policyspec.reference import ARCCachePolicy as ReferenceARC
from policyspec.vllm.manager import OffloadingManagerEmulation
from policyspec.vllm.recorder import Call, KeyNames, RecordingPolicy, first_difference
from policyspec.vllm.traffic import TrafficConfig, drive

RELEASE = installed_release(require_vllm("vllm.v1.kv_offload.cpu.manager"))

from vllm.v1.kv_offload.base import ReqContext  # noqa: E402
from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager  # noqa: E402
from vllm.v1.kv_offload.cpu.policies.arc import ARCCachePolicy  # noqa: E402
from vllm.v1.kv_offload.cpu.policies.base import ChunkStatus  # noqa: E402
from vllm.v1.kv_offload.cpu.policies.lru import LRUCachePolicy  # noqa: E402

REFERENCES: dict[str, tuple[type, type]] = {
    "0.33": (LRU033CachePolicy, ReferenceARC),
    "0.34": (LRU034CachePolicy, ARC034CachePolicy),
}
"""The reference LRU and ARC of each release."""

POLICIES: dict[str, type] = {
    "vllm-lru": LRUCachePolicy,
    "vllm-arc": ARCCachePolicy,
    f"reference-lru-{RELEASE}": REFERENCES[RELEASE][0],
    f"reference-arc-{RELEASE}": REFERENCES[RELEASE][1],
}
PAIRS = [("vllm-lru", f"reference-lru-{RELEASE}"), ("vllm-arc", f"reference-arc-{RELEASE}")]


def _configs() -> list[tuple[TrafficConfig, int, int]]:
    """(traffic, chunks, store threshold): small and larger caches, the
    threshold off and on, one or two threads."""
    out = []
    for seed in range(12):
        for num_chunks in (6, 16):
            threshold = 2 if seed % 3 == 2 else 1
            config = TrafficConfig(
                seed=seed, requests=60, running=2 + seed % 4, delay=(0, 1 + seed % 3),
                reset=0.03, two_threads=seed % 2 == 1,
                touch=TrafficConfig.touch if RELEASE == "0.33" else 0.0,  # 0.34 has none
            )
            out.append((config, num_chunks, threshold))
    return out


CONFIGS = _configs()


@contextmanager
def figures_shown(capsys: pytest.CaptureFixture[str]) -> Iterator[Callable[[str], None]]:
    with capsys.disabled():
        yield lambda line: print(f"\n  {line}")


def _real(policy: RecordingPolicy, num_chunks: int, threshold: int) -> Any:
    manager = CPUOffloadingManager(num_chunks, enable_events=True, store_threshold=threshold)
    manager._policy = policy
    return manager


def _emulated(policy: RecordingPolicy, num_chunks: int, threshold: int) -> Any:
    return OffloadingManagerEmulation(
        policy, num_chunks, enable_events=True, store_threshold=threshold, chunk_type=ChunkStatus,
        release=RELEASE,
    )


@dataclass
class Run:
    calls: list[Call]
    """Every policy call of the traffic, then of the final drain."""
    final: list[Any]
    """The final eviction order: (key id, chunk) of each victim, evicting
    one at a time until none is left."""
    requests: int


def recorded(
    build: Callable[[RecordingPolicy, int, int], Any],
    policy_cls: type,
    config: TrafficConfig,
    num_chunks: int,
    threshold: int,
) -> Run:
    """One run of the traffic, recorded."""
    policy = RecordingPolicy(policy_cls(cache_capacity=num_chunks), KeyNames())
    counts = drive(build(policy, num_chunks, threshold), config, req_context_type=ReqContext)
    while policy.evict(1, set()):
        pass
    final = []
    for call in policy.calls[-2::-1]:  # the last evict found nothing
        if call.op != "evict" or call.args != (1, ("set", ())):
            break
        final.append(call.result[1][0])
    return Run(policy.calls, final[::-1], counts.requests)


def differences(left: list[Call], right: list[Call]) -> int:
    return sum(a != b for a, b in zip(left, right, strict=False)) + abs(len(left) - len(right))


def shown(left: list[Call], right: list[Call], names: tuple[str, str]) -> str:
    at = first_difference(left, right)
    assert at is not None
    lines = [f"first difference at call {at}:"]
    for index in range(max(0, at - 4), at + 1):
        for name, calls in zip(names, (left, right), strict=True):
            lines.append(f"  {index} {name}: {calls[index] if index < len(calls) else '-'}")
    return "\n".join(lines)


@pytest.mark.parametrize("policy", list(POLICIES))
def test_the_emulation_calls_the_policy_exactly_as_the_real_manager(
    policy: str, capsys: pytest.CaptureFixture[str]
) -> None:
    requests = calls = differ = evictions = final_differ = drained = 0
    first: str | None = None
    for config, num_chunks, threshold in CONFIGS:
        real = recorded(_real, POLICIES[policy], config, num_chunks, threshold)
        emulated = recorded(_emulated, POLICIES[policy], config, num_chunks, threshold)
        if real.calls != emulated.calls and first is None:
            first = f"{config}: " + shown(real.calls, emulated.calls, ("real", "emulation"))
        drained += len(real.final)
        requests += real.requests
        calls += len(real.calls)
        differ += differences(real.calls, emulated.calls)
        evictions += sum(1 for c in real.calls if c.op == "evict" and c.result)
        final_differ += real.final != emulated.final
    assert calls > 10_000 and evictions > 100 and drained > 5 * len(CONFIGS)
    with figures_shown(capsys) as show:
        show(f"vLLM {RELEASE}: real manager vs emulation, {policy}: {len(CONFIGS)} runs, "
             f"{requests} requests, "
             f"{calls} calls recorded from the real manager, {evictions} successful evicts, "
             f"{differ} differences; final eviction orders ({drained} victims) that differ: "
             f"{final_differ}")
    assert differ == 0 and final_differ == 0, first


@pytest.mark.parametrize(("vllm_name", "reference_name"), PAIRS)
def test_each_reference_answers_every_call_as_vllms_own_policy(
    vllm_name: str, reference_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    requests = calls = differ = victims = final_differ = drained = 0
    first: str | None = None
    for config, num_chunks, threshold in CONFIGS:
        theirs = recorded(_emulated, POLICIES[vllm_name], config, num_chunks, threshold)
        ours = recorded(_emulated, POLICIES[reference_name], config, num_chunks, threshold)
        if theirs.calls != ours.calls and first is None:
            first = f"{config}: " + shown(theirs.calls, ours.calls, (vllm_name, reference_name))
        drained += len(theirs.final)
        final_differ += theirs.final != ours.final
        requests += theirs.requests
        calls += len(theirs.calls)
        differ += differences(theirs.calls, ours.calls)
        victims += sum(len(c.result[1]) for c in theirs.calls if c.op == "evict" and c.result)
    assert drained > 5 * len(CONFIGS)
    with figures_shown(capsys) as show:
        show(f"{reference_name} vs {vllm_name} through the emulation: {len(CONFIGS)} runs, "
             f"{requests} requests, {calls} calls compared, {victims} victims, "
             f"{differ} differences; final eviction orders ({drained} victims) that differ: "
             f"{final_differ}")
    assert differ == 0 and final_differ == 0, first
