"""The request traffic (policyspec.vllm.traffic) on the emulated manager:
deterministic for a seed, rich in what the 0.33 caller contract is about
(shared prefixes, missing and out-of-order positions, refusals, failures,
late completions, resets that drop jobs), and on two threads when asked.
"""

from __future__ import annotations

import threading
from collections import Counter

from policyspec.reference import ARCCachePolicy, LRU033CachePolicy
from policyspec.vllm.manager import OffloadingManagerEmulation
from policyspec.vllm.recorder import Call, RecordingPolicy
from policyspec.vllm.traffic import TrafficConfig, TrafficCounts, drive


def run(config: TrafficConfig, num_chunks: int = 8, threshold: int = 1,
        policy: type = LRU033CachePolicy) -> tuple[list[Call], TrafficCounts]:
    recording = RecordingPolicy(policy(cache_capacity=num_chunks))
    emulated = OffloadingManagerEmulation(
        recording, num_chunks, store_threshold=threshold, enable_events=True
    )
    counts = drive(emulated, config)
    return recording.calls, counts


def test_the_same_seed_gives_the_same_calls_and_another_seed_others() -> None:
    first, counts = run(TrafficConfig(seed=3, requests=30))
    again, _ = run(TrafficConfig(seed=3, requests=30))
    other, _ = run(TrafficConfig(seed=4, requests=30))
    assert first == again and first != other
    assert counts.requests == counts.finishes == 30


def test_the_traffic_exercises_what_the_caller_contract_is_about() -> None:
    total = TrafficCounts()
    ops: Counter[str] = Counter()
    for seed in range(6):
        calls, counts = run(TrafficConfig(seed=seed, requests=60, running=4, delay=(0, 3),
                                          reset=0.05))
        ops.update(call.op for call in calls)
        ops["evict -> None"] += sum(1 for c in calls if c.op == "evict" and c.result is None)
        for name, value in vars(counts).items():
            if isinstance(value, int):
                setattr(total, name, getattr(total, name) + value)
    for name in ("lookups", "loads", "stores_refused", "evicted", "store_failures", "touches",
                 "resets", "jobs_dropped", "unpositioned_requests", "shuffled_requests",
                 "late_completions", "events"):
        assert getattr(total, name) > 0, (name, total)
    assert {op for op, n in ops.items() if n} == {
        "get", "insert", "remove", "touch", "evict", "clear", "mark_evictable",
        "mark_non_evictable", "on_store_miss", "on_request_access", "on_request_finished",
        "evict -> None",
    }


def test_the_threshold_skips_first_offers() -> None:
    recording = RecordingPolicy(LRU033CachePolicy(cache_capacity=8))
    emulated = OffloadingManagerEmulation(recording, 8, store_threshold=2)
    counts = drive(emulated, TrafficConfig(seed=1, requests=40))
    assert emulated.stores_skipped > 0 and counts.chunks_stored > 0


def test_two_threads_take_turns_and_none_is_left_running() -> None:
    before = threading.active_count()
    calls, counts = run(TrafficConfig(seed=5, requests=30, two_threads=True),
                        policy=ARCCachePolicy)
    again, _ = run(TrafficConfig(seed=5, requests=30, two_threads=True), policy=ARCCachePolicy)
    assert threading.active_count() == before
    assert min(counts.calls_by_thread) > 0
    assert {call.thread for call in calls} == {"MainThread", "policyspec-traffic-2"}
    assert calls == again
