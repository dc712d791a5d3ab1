"""The emulation of vLLM 0.33.0's CPUOffloadingManager
(policyspec.vllm.manager), call by call on hand-made scenarios, without
vLLM: the order of the policy calls, their arguments and container types,
the chunk pool, the counters, the request record. The same facts are held
against the real manager by tests/test_vllm_differential.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from policyspec.reference import LRU033CachePolicy
from policyspec.vllm.manager import (
    Lookup,
    ManagerAssertionError,
    OffloadingManagerEmulation,
    RequestCacheAccess,
)
from policyspec.vllm.recorder import KeyNames, RecordingPolicy
from policyspec.vllm.standins.keys import ReqContext
from policyspec.vllm.traffic import BLOCK_TOKENS, request_key


def key(block: int, group: int = 0) -> bytes:
    return request_key(block, group)


class Writes:
    """A ref_cnt listener writing into the recording's own log, so that the
    manager's writes and the policy's calls read as one sequence."""

    def __init__(self, log: list[Any], names: KeyNames) -> None:
        self.log = log
        self.names = names

    def before_write(self, key: Any, chunk: Any, new_ref_cnt: int) -> None:
        self.log.append(("write", self.names(key), new_ref_cnt))

    def after_write(self, key: Any, chunk: Any, new_ref_cnt: int) -> None:
        assert chunk.ref_cnt == new_ref_cnt


def manager(num_chunks: int, **options: Any) -> tuple[OffloadingManagerEmulation, list[Any]]:
    """An emulated manager around a recorded reference LRU; its log holds
    (op, args...) tuples and the manager's ref_cnt writes."""
    names = KeyNames()
    log: list[Any] = []
    recording = RecordingPolicy(
        LRU033CachePolicy(cache_capacity=num_chunks), names,
        sink=lambda call: log.append((call.op, *call.args)),
    )
    emulated = OffloadingManagerEmulation(
        recording, num_chunks, listener=Writes(log, names), **options
    )
    for block in range(10):  # ids 0..9 are blocks 0..9 of group 0
        names(key(block))
    return emulated, log


def context(req_id: str, *blocks: int, group: int = 0) -> ReqContext:
    ctx = ReqContext(req_id)
    for index, block in enumerate(blocks):
        ctx.set_offload_key_position(key(block, group), BLOCK_TOKENS * (index + 1))
    return ctx


def ids(*blocks: int) -> tuple[int, ...]:
    return tuple(blocks)


def ops(log: list[Any]) -> list[Any]:
    return [entry for entry in log if entry[0] != "get"]


def test_a_store_asks_every_key_then_reports_misses_and_first_accesses_then_inserts() -> None:
    m, log = manager(4)
    ctx = context("r", 0, 1)
    out = m.prepare_store([key(0), key(1)], ctx)
    assert out is not None and out.keys_to_store == [key(0), key(1)] and out.chunk_ids == [0, 1]
    assert log == [
        ("get", 0),
        ("get", 1),
        ("on_store_miss", ("list", ids(0, 1)), ("ctx", "r")),
        ("on_request_access", ("list", ids(0, 1)), ("ctx", "r")),
        ("write", 0, -1),
        ("write", 1, -1),
        ("insert", 0, ("chunk", 0, -1), ("ctx", "r")),
        ("insert", 1, ("chunk", 1, -1), ("ctx", "r")),
    ]
    assert m.num_write_pending_chunks == 2 and m.num_evictable_chunks == 0


def test_completion_writes_ref_cnt_before_mark_evictable_and_failure_removes() -> None:
    m, log = manager(4)
    ctx = context("r", 0, 1)
    m.prepare_store([key(0), key(1)], ctx)
    log.clear()
    m.complete_store([key(0)], ctx)
    m.complete_store([key(1)], ctx, success=False)
    m.complete_store([key(0), key(1)], ctx)  # nothing in flight: no calls but get
    assert log == [
        ("get", 0), ("write", 0, 0), ("mark_evictable", 0),
        ("get", 1), ("remove", 1),
        ("get", 0), ("get", 1),
    ]
    assert m.free_list == [1] and m.num_evictable_chunks == 1
    assert m.num_write_pending_chunks == 0


def test_a_full_cache_evicts_with_every_offered_key_protected_then_reuses_freed_ids() -> None:
    m, log = manager(2)
    first = context("a", 0, 1)
    m.prepare_store([key(0), key(1)], first)
    m.complete_store([key(0), key(1)], first)
    log.clear()
    second = context("b", 0, 2)
    out = m.prepare_store((key(0), key(2)), second)  # any collection
    assert out is not None and out.evicted_keys == [key(1)] and out.chunk_ids == [1]
    assert ops(log) == [
        ("on_store_miss", ("list", ids(2)), ("ctx", "b")),
        ("on_request_access", ("list", ids(0, 2)), ("ctx", "b")),
        ("evict", 1, ("set", ids(0, 2))),
        ("write", 2, -1),
        ("insert", 2, ("chunk", 1, -1), ("ctx", "b")),
    ]
    record = second.get_state(RequestCacheAccess)
    assert record.reused_keys == {key(0)} and record.inserted_keys == {key(2)}


def test_the_fast_fail_guard_skips_evict_but_the_access_is_recorded_first() -> None:
    m, log = manager(1)
    ctx = context("r", 0, 1)
    assert m.prepare_store([key(0)], ctx) is not None  # in flight: not evictable
    log.clear()
    assert m.prepare_store([key(1)], ctx) is None
    assert ops(log) == [
        ("on_store_miss", ("list", ids(1)), ("ctx", "r")),
        ("on_request_access", ("list", ids(1)), ("ctx", "r")),
    ]
    log.clear()
    assert m.prepare_store([key(1)], ctx) is None  # offered again by the same request
    assert ops(log) == []  # deduplicated per request: no second miss, no second access
    other = context("s", 1)
    assert m.prepare_store([key(1)], other) is None
    assert [entry[0] for entry in ops(log)] == ["on_store_miss", "on_request_access"]


def test_a_refused_eviction_refuses_the_store() -> None:
    m, log = manager(1)
    ctx = context("r", 0, 1)
    m.prepare_store([key(0)], ctx)
    m.complete_store([key(0)], ctx)
    log.clear()
    # the only idle chunk is offered again, so protected: evict returns None
    assert m.prepare_store([key(0), key(1)], ctx) is None
    assert ("evict", 1, ("set", ids(0, 1))) in log
    assert not [entry for entry in log if entry[0] == "insert"]
    assert m.num_evictable_chunks == 1


def test_a_load_pins_with_mark_non_evictable_before_the_increment() -> None:
    m, log = manager(2)
    ctx = context("r", 0)
    m.prepare_store([key(0)], ctx)
    m.complete_store([key(0)], ctx)
    log.clear()
    reader = context("s", 0)
    assert m.lookup(key(0), reader) is Lookup.HIT
    assert m.prepare_load([key(0)], reader) == [0]
    assert m.prepare_load([key(0)], reader) == [0]  # a second reader: no hook
    m.complete_load([key(0)], reader)
    m.complete_load([key(0)], reader)
    assert ops(log) == [
        ("mark_non_evictable", 0), ("write", 0, 1),
        ("on_request_access", ("list", ids(0)), ("ctx", "s")),
        ("write", 0, 2),
        ("write", 0, 1),
        ("write", 0, 0), ("mark_evictable", 0),
    ]
    assert reader.get_state(RequestCacheAccess).reused_keys == {key(0)}


def test_lookup_tells_pending_from_ready() -> None:
    m, _ = manager(2)
    ctx = context("r", 0)
    assert m.lookup(key(0), ctx) is Lookup.MISS
    m.prepare_store([key(0)], ctx)
    assert m.lookup(key(0), ctx) is Lookup.HIT_PENDING
    with pytest.raises(ManagerAssertionError, match="not ready"):
        m.prepare_load([key(0)], ctx)


def test_finish_sorts_each_group_by_position_only_when_every_key_has_one() -> None:
    m, log = manager(8)
    ctx = ReqContext("r")
    tail_first = [key(2), key(1), key(0), key(1, 1), key(0, 1)]
    for block in (0, 1, 2):
        ctx.set_offload_key_position(key(block), BLOCK_TOKENS * (block + 1))
    ctx.set_offload_key_position(key(1, 1), BLOCK_TOKENS * 2)  # key(0, 1) has none
    m.prepare_store(tail_first, ctx)  # stored out of order, as SWA backfills do
    m.complete_store(tail_first, ctx)
    log.clear()
    m.on_request_finished(ctx)
    m.on_request_finished(ctx)  # once per request
    (finish,) = [entry for entry in log if entry[0] == "on_request_finished"]
    names = {k: i for i, k in enumerate([key(b) for b in range(10)] + [key(1, 1), key(0, 1)])}
    assert finish[1] == (
        "tuple",
        (("tuple", ids(0, 1, 2)), ("tuple", (names[key(1, 1)], names[key(0, 1)]))),
    )
    assert finish[2] == ("set", tuple(sorted(names[k] for k in tail_first)))
    assert finish[3] == ("set", ())


def test_finish_passes_only_inserted_then_reused_and_a_reread_of_ones_own_is_no_reuse() -> None:
    m, log = manager(8)
    writer = context("w", 0, 1)
    m.prepare_store([key(0), key(1)], writer)
    m.complete_store([key(0), key(1)], writer)
    m.prepare_load([key(0)], writer)  # re-reading its own chunk
    m.complete_load([key(0)], writer)
    reader = context("r", 0, 1, 2)
    m.prepare_load([key(0), key(1)], reader)
    m.complete_load([key(0), key(1)], reader)
    m.prepare_store([key(0), key(1), key(2)], reader)
    log.clear()
    m.on_request_finished(writer)
    m.on_request_finished(reader)
    finishes = [entry for entry in log if entry[0] == "on_request_finished"]
    assert [f[2:4] for f in finishes] == [
        (("set", ids(0, 1)), ("set", ())),
        (("set", ids(2)), ("set", ids(0, 1))),
    ]


def test_reset_clears_restarts_the_pool_and_makes_old_records_stale() -> None:
    m, log = manager(2)
    old = context("old", 0, 1)
    m.prepare_store([key(0), key(1)], old)
    m.reset_cache()
    assert log[-1] == ("clear",)
    assert (m.num_allocated_chunks, m.free_list, m.num_evictable_chunks) == (0, [], 0)
    assert m.num_write_pending_chunks == 0 and m.cache_generation == 1
    log.clear()
    m.on_request_finished(old)  # its record is from generation 0
    assert log == []
    out = m.prepare_store([key(1)], old)  # a running request stores again
    assert out is not None and out.chunk_ids == [0]
    assert ("on_store_miss", ("list", ids(1)), ("ctx", "old")) in log
    assert old.get_state(RequestCacheAccess).cache_generation == 1


def test_a_key_met_after_finish_is_the_managers_assertion() -> None:
    m, _ = manager(2)
    ctx = context("r", 0, 1)
    m.prepare_store([key(0)], ctx)
    m.on_request_finished(ctx)
    with pytest.raises(ManagerAssertionError, match="after request finalization"):
        m.prepare_store([key(1)], ctx)


def test_the_threshold_stores_a_key_at_its_second_offer_and_still_counts_reuse() -> None:
    m, log = manager(4, store_threshold=2)
    ctx = context("r", 0, 1)
    out = m.prepare_store([key(0)], ctx)
    assert out is not None and out.keys_to_store == [] and m.stores_skipped == 1
    assert ops(log) == []  # below the threshold: no miss, no access recorded
    out = m.prepare_store([key(0)], context("s", 0))
    assert out is not None and out.keys_to_store == [key(0)]


def test_the_tracker_keeps_counts_across_a_reset_and_drops_its_least_recent() -> None:
    m, _ = manager(4, store_threshold=2, max_tracker_size=2)
    ctx = context("r", 0, 1, 2)
    for block in (0, 1, 2):
        m.prepare_store([key(block)], ctx)
    assert m.offer_counts is not None and list(m.offer_counts) == [key(1), key(2)]
    m.reset_cache()
    assert m.offer_counts == {key(1): 1, key(2): 1}
    out = m.prepare_store([key(2)], context("s", 2))
    assert out is not None and out.keys_to_store == [key(2)]


def test_events_are_drained_lazily_and_a_failed_stores_keys_only_while_absent() -> None:
    m, log = manager(2, enable_events=True)
    ctx = context("r", 0, 1)
    m.prepare_store([key(0)], ctx)
    m.complete_store([key(0)], ctx, success=False)
    m.prepare_store([key(0)], context("s", 0))  # a retry owns the key again
    log.clear()
    events = m.take_events()
    assert log == []  # nothing read until the consumer asks
    assert list(events) == []
    assert log == [("get", 0)]


def test_fresh_chunk_ids_come_first_then_freed_ones_last_in_first_out() -> None:
    m, _ = manager(3)
    ctx = context("r", *range(6))
    m.prepare_store([key(0), key(1), key(2)], ctx)
    m.complete_store([key(1)], ctx, success=False)
    m.complete_store([key(0)], ctx, success=False)
    out = m.prepare_store([key(3), key(4)], ctx)
    assert out is not None and out.chunk_ids == [0, 1]
