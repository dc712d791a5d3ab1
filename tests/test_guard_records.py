"""The guard writes each record's text itself (``history.texts``): every
operation of spec/history.md's table, as JSON the judge reads back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from policyspec.guard import GuardPolicy
from policyspec.history import format as fmt
from policyspec.history.texts import CLOSED, NUMBERS, TextIds
from policyspec.reference.lru import LRUCachePolicy
from policyspec.reference.lru033 import LRU033CachePolicy
from policyspec.subject import Block
from policyspec.vllm.standins.keys import ReqContext


def _records(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text(encoding="ascii").splitlines()[1:]]


def test_each_call_is_written_as_its_record_of_the_format_table(tmp_path: Path) -> None:
    out = tmp_path / "h.jsonl"
    guard = GuardPolicy(4, target=LRU033CachePolicy, history=out)
    ctx = ReqContext("req-a")
    ctx.set_offload_key_position(b"a", 16)
    a, b = Block(-1, 7), Block(-1, 9)
    guard.on_store_miss([b"a", b"b"], ctx)
    guard.insert(b"a", a, ctx)
    guard.insert(b"b", b, ctx)
    assert guard.get(b"a") is a
    assert guard.get(b"z") is None
    a.ref_cnt = 0
    guard.mark_evictable(b"a")
    guard.on_request_access([b"a"], ctx)
    guard.mark_non_evictable(b"a")
    a.ref_cnt = 1
    assert guard.get(b"a") is a
    a.ref_cnt = 0
    guard.mark_evictable(b"a")
    guard.touch([b"b", b"a"], ctx)
    assert guard.evict(1, {b"b"}) == [(b"a", a)]
    guard.remove(b"b")
    guard.on_request_finished(((b"a", b"b"),), {b"a"}, set(), ctx)
    guard.clear()
    guard.close()
    assert _records(out) == [
        [fmt.POSITIONS, 0, [0, 16]],
        [fmt.STORE_MISS, 0, 0, [0, 1]],
        [fmt.INSERT, 0, 7, -1, 0, 0],
        [fmt.INSERT, 1, 9, -1, 0, 0],
        [fmt.GET, 0, 7, -1],
        [fmt.GET, 2],
        [fmt.MARK_EVICTABLE, 0, 0],
        [fmt.ACCESS, 0, 0, [0]],
        [fmt.MARK_NON_EVICTABLE, 0, 0],
        [fmt.GET, 0, 7, 1],
        [fmt.MARK_EVICTABLE, 0, 0],
        [fmt.TOUCH, [1, 0]],
        [fmt.EVICT, 1, [1], [0, 7, 0]],
        [fmt.REMOVE, 1],
        [fmt.FINISH, 0, 0, [[0, 1]], [0], []],
        [fmt.CLEAR],
    ]
    assert guard.calls == 15


def test_a_copy_a_stranger_and_a_raise_are_written_as_such(tmp_path: Path) -> None:
    class Odd(LRUCachePolicy[Any, Any]):
        def get(self, key: Any) -> Any:
            found = super().get(key)
            if key == b"copy":
                return Block(found.ref_cnt, found.block_id)
            return "not a chunk" if key == b"odd" else found

        def remove(self, key: Any) -> None:
            raise RuntimeError("no remove today")

    out = tmp_path / "h.jsonl"
    guard = GuardPolicy(4, target=Odd, history=out)
    guard.insert(b"copy", Block(-1, 3))
    guard.insert(b"odd", Block(-1, 4))
    guard.get(b"copy")
    guard.get(b"odd")
    with pytest.raises(RuntimeError):
        guard.remove(b"odd")  # passed on to the caller, and recorded
    guard.close()
    assert _records(out)[2:] == [
        [fmt.GET, 0, -2, -1],  # NOT_SAME: not the very chunk inserted
        [fmt.GET, 1, -2, -9],  # a string: no ref_cnt
        [fmt.RAISED, "RuntimeError", [fmt.REMOVE, 1]],
    ]


def test_ids_are_numbered_on_first_sight_and_never_reused() -> None:
    ids = TextIds()
    assert [ids[k] for k in ("a", "b", "a", "c")] == ["0", "1", "0", "2"]
    assert ids.forget(keep={"b"}) == 2
    assert ids["a"] == "3" and ids["b"] == "1"
    assert NUMBERS[-1] == "-1" and CLOSED[12] == "12]" and NUMBERS[2.5] == "2.5"


def test_what_the_caller_changes_after_a_call_is_recorded_as_it_was_during_it(
        tmp_path: Path) -> None:
    """The guard encodes its records in batches, later than the calls: what
    the caller owns (``ref_cnt``, the key lists, the context's positions)
    is read during the call, not when the batch is encoded."""
    out = tmp_path / "h.jsonl"
    guard = GuardPolicy(4, target=LRU033CachePolicy, history=out)
    ctx = ReqContext("req-a")
    a = Block(-1, 7)
    keys = [b"a"]
    guard.on_store_miss(keys, ctx)
    ctx.set_offload_key_position(b"a", 16)  # placed after the call: not in its record
    keys.append(b"late")  # the caller reuses its list
    guard.insert(b"a", a, ctx)
    a.ref_cnt = 0
    guard.mark_evictable(b"a")
    a.ref_cnt = 3  # after the call
    order = [b"a"]
    guard.touch(order, ctx)
    order.insert(0, b"b")
    assert guard.get(b"a") is a
    a.ref_cnt = 1
    assert guard.calls == 5
    guard.close()
    assert _records(out) == [
        [fmt.STORE_MISS, 0, 0, [0]],
        [fmt.POSITIONS, 0, [0, 16]],
        [fmt.INSERT, 0, 7, -1, 0, 0],
        [fmt.MARK_EVICTABLE, 0, 0],
        [fmt.TOUCH, [0]],
        [fmt.GET, 0, 7, 3],
    ]


def test_a_thread_marker_follows_the_positions_its_call_read(tmp_path: Path) -> None:
    """A call from another thread: its positions marker, then the thread
    marker, then the call (the order in which they were read)."""
    import threading

    out = tmp_path / "h.jsonl"
    guard = GuardPolicy(4, target=LRU033CachePolicy, history=out)
    ctx = ReqContext("req-a")
    ctx.set_offload_key_position(b"a", 16)
    worker = threading.Thread(target=guard.on_store_miss, args=([b"a"], ctx), name="poll")
    worker.start()
    worker.join()
    guard.on_request_access([b"a"], ctx)
    guard.close()
    assert _records(out) == [
        [fmt.POSITIONS, 0, [0, 16]],
        [fmt.THREAD, 1, "poll"],
        [fmt.STORE_MISS, 0, 0, [0]],
        [fmt.THREAD, 0],
        [fmt.ACCESS, 0, 0, [0]],
    ]
