"""The seed-API view of every revision: the calls the policy receives when
the engines call ``get/insert/remove/touch(keys)/evict(n, p)``."""

from __future__ import annotations

import copy
import ctypes
from pathlib import Path
from typing import Any

from policyspec.adapters import SeedAdapter, load_subject, subject_for_class, unwrap
from policyspec.adapters.seed import adapt
from policyspec.reference import ARCCachePolicy
from policyspec.vllm.standins import keys as standin_keys
from policyspec.vllm.standins import policies as sp

CORPUS = Path(__file__).parent / "vllm_corpus"


class Recorder:
    """Records every call; eviction answers from ``answer``."""

    answer: Any = ()

    def __init__(self, cache_capacity: int) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.blocks: dict[Any, Any] = {}

    def get(self, key: Any) -> Any:
        return self.blocks.get(key)

    def insert(self, key: Any, block: Any) -> None:
        self.calls.append(("insert", key))
        self.blocks[key] = block

    def remove(self, key: Any) -> None:
        del self.blocks[key]

    def clear(self) -> None:
        self.calls.append(("clear",))


class SeedRecorder(Recorder):
    def touch(self, keys: Any) -> None:
        self.calls.append(("touch", keys))

    def evict(self, n: int, protected: Any) -> Any:
        self.calls.append(("evict", n, protected))
        return self.answer

    def mark_evictable(self, key: Any) -> None:
        self.calls.append(("mark_evictable", key))

    def mark_non_evictable(self, key: Any) -> None:
        self.calls.append(("mark_non_evictable", key))


class ContextRecorder(Recorder):
    def touch(self, keys: Any, req_context: Any) -> None:
        self.calls.append(("touch", keys, req_context))

    def evict(self, n: int, protected: Any) -> Any:
        self.calls.append(("evict", n, protected))
        return self.answer


class SessionRecorder(ContextRecorder):
    def evict(self, n: int, protected: Any, req_context: Any, num_blocks_in_cache: int) -> Any:
        self.calls.append(("evict", n, protected, req_context, num_blocks_in_cache))
        return self.answer

    def open_session(self, req_context: Any, num_blocks_in_cache: int) -> None:
        self.calls.append(("open", req_context, num_blocks_in_cache))

    def close_session(self) -> None:
        self.calls.append(("close",))


class DraftSessionRecorder(SessionRecorder):
    def evict(self, n: int, protected: Any, req_id: str, start_pos: int) -> Any:  # type: ignore[override]
        self.calls.append(("evict", n, protected, req_id, start_pos))
        return self.answer


class DeprioritizedRecorder(ContextRecorder):
    def evict(self, n: int, protected: Any, deprioritized: Any) -> Any:  # type: ignore[override]
        self.calls.append(("evict", n, protected, deprioritized))
        return self.answer


class UntilRecorder(ContextRecorder):
    def insert(self, key: Any, chunk: Any) -> None:
        super().insert(key, chunk)

    def evict_until(self, can_fit: Any, protected: Any) -> Any:
        self.calls.append(("evict_until", protected))
        return None


def test_a_seed_policy_is_driven_directly_without_a_wrapper() -> None:
    policy = subject_for_class(SeedRecorder).build(4)
    assert type(policy) is SeedRecorder
    assert unwrap(policy) is policy


def test_touch_receives_a_req_context_from_r4_on() -> None:
    policy = subject_for_class(ContextRecorder).build(4)
    assert isinstance(policy, SeedAdapter)
    policy.touch([b"a", b"b"])
    (_, keys, ctx) = unwrap(policy).calls[-1]  # type: ignore[attr-defined]
    assert keys == [b"a", b"b"]
    assert isinstance(ctx, standin_keys.ReqContext) and ctx.req_id == "policyspec-req-0"
    policy.use_request("req-7")
    policy.touch([])
    assert unwrap(policy).calls[-1][2].req_id == "req-7"  # type: ignore[attr-defined]


def test_matching_methods_are_the_policys_own_bound_methods() -> None:
    policy = subject_for_class(ContextRecorder).build(4)
    inner = unwrap(policy)
    assert isinstance(policy, SeedAdapter)
    for name in ("get", "insert", "remove", "evict", "clear"):
        assert getattr(policy, name) == getattr(inner, name), name


def test_r6_inserts_run_inside_sessions() -> None:
    policy = subject_for_class(SessionRecorder).build(4)
    inner: Any = unwrap(policy)
    ctx = policy.req_context  # type: ignore[attr-defined]
    policy.insert(b"a", object())
    assert inner.calls == [("open", ctx, 0), ("insert", b"a"), ("close",)]
    policy.evict(1, {b"a"})
    assert inner.calls[-1] == ("evict", 1, {b"a"}, ctx, 0)


def test_r6_store_batch_is_one_session_with_its_prefix_depth() -> None:
    policy = subject_for_class(SessionRecorder).build(4)
    inner: Any = unwrap(policy)
    policy.insert(b"a", object())
    inner.calls.clear()
    ctx = policy.req_context  # type: ignore[attr-defined]
    policy.begin_store([b"a", b"b", b"c"])  # type: ignore[attr-defined]
    policy.evict(2, {b"a", b"b", b"c"})
    policy.insert(b"b", object())
    policy.insert(b"c", object())
    policy.end_store()  # type: ignore[attr-defined]
    assert inner.calls == [
        ("evict", 2, {b"a", b"b", b"c"}, ctx, 1),  # the manager evicts before opening
        ("open", ctx, 1),
        ("insert", b"b"),
        ("insert", b"c"),
        ("close",),
    ]


def test_r6_draft_gets_the_request_id() -> None:
    policy = subject_for_class(DraftSessionRecorder).build(4)
    assert subject_for_class(DraftSessionRecorder).api == "R6-draft"
    policy.evict(1, set())
    assert unwrap(policy).calls[-1] == ("evict", 1, set(), "policyspec-req-0", 0)  # type: ignore[attr-defined]


def test_r7b_evict_deprioritizes_nothing() -> None:
    policy = subject_for_class(DeprioritizedRecorder).build(4)
    policy.evict(2, {b"p"})
    assert unwrap(policy).calls[-1] == ("evict", 2, {b"p"}, set())  # type: ignore[attr-defined]


def test_r7_exposes_evict_until_and_keeps_its_own_evict() -> None:
    subject = subject_for_class(UntilRecorder)
    assert subject.api == "R7" and subject.has("evict_until")
    policy = subject.build(4)
    inner: Any = unwrap(policy)
    assert policy.evict == inner.evict
    assert policy.evict_until(lambda _found: True, {b"p"}) is None  # type: ignore[attr-defined]
    assert inner.calls[-1] == ("evict_until", {b"p"})


def test_chunk_blocks_are_chunk_status_with_a_block_id_alias() -> None:
    subject = subject_for_class(UntilRecorder)
    block = subject.make_block(0, 11)
    assert isinstance(block, sp.ChunkStatus) and isinstance(block, ctypes.Structure)
    assert (block.ref_cnt, block.chunk_id, block.block_id, block.is_ready) == (0, 11, 11, True)


def test_blocks_are_vllm_block_status_built_as_the_manager_builds_them() -> None:
    block = subject_for_class(SeedRecorder).make_block(-1, 3)
    assert type(block) is sp.BlockStatus
    assert (block.ref_cnt, block.block_id, block.is_ready) == (-1, 3, False)


def test_corpus_r6_policy_runs_a_store_batch_through_the_adapter() -> None:
    subject = load_subject(f"{CORPUS / 'r6_session_aware_policy.py'}:SessionAwareCachePolicy")
    policy: Any = subject.build(4)
    keys = [subject.make_key(i) for i in range(3)]
    policy.begin_store(keys)
    assert policy.evict(0, set(keys)) == []
    for i, key in enumerate(keys):
        policy.insert(key, subject.make_block(-1, i))
    policy.end_store()
    inner: Any = unwrap(policy)
    assert list(inner.members.values()) == [keys]  # one session for the batch
    assert inner.open_id is None


def test_a_deep_copy_of_the_view_drives_the_copied_policy() -> None:
    """Branching engines fork a harness with deepcopy: the copy's closures
    (R9's insert, touch) must reach the copy's policy, not the original."""
    original = adapt(ARCCachePolicy(cache_capacity=2), "R9", standin_keys.ReqContext("r"))
    ready = sp.ChunkStatus(0)
    ready.ref_cnt = 0
    original.insert("a", ready)
    twin = copy.deepcopy(original)
    twin.insert("b", sp.ChunkStatus(1))
    twin.touch(["a"])
    assert original.get("b") is None and twin.get("b") is not None
    assert list(unwrap(original).t1) == ["a"] and list(unwrap(twin).t2) == ["a"]
