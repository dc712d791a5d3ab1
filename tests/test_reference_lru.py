"""The reference LRU (policyspec.reference.LRUCachePolicy) against the model.

Random legal call sequences (legality decided by the model's precondition
predicates only) must give exactly the model's answers; the policy must
never write a block's fields, must accept vLLM's ctypes ``BlockStatus``
layout, must be as strict as the seed where the seed raises, and must not
look at pinned or in-flight blocks when it evicts (counted, not timed).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Hashable
from typing import Any

import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st
from strategies import DEFAULT_KEY_SPACE, keys

from policyspec.model import operations
from policyspec.model.preconditions import (
    can_end_read,
    can_evict,
    can_finish_store,
    can_insert,
    can_mark_non_evictable,
    can_remove,
    can_start_read,
)
from policyspec.model.state import IDLE, IN_FLIGHT, State
from policyspec.reference import LRUCachePolicy
from policyspec.subject import offload_key

ALL_KEYS = range(DEFAULT_KEY_SPACE)


class ProbeBlock:
    """A block status that counts reads of ``ref_cnt`` and refuses any write
    except the manager's own (``manager_write``)."""

    __slots__ = ("_block_id", "_ref_cnt", "ref_reads")
    _block_id: int
    _ref_cnt: int
    ref_reads: int

    def __init__(self, ref_cnt: int, block_id: int) -> None:
        object.__setattr__(self, "_ref_cnt", ref_cnt)
        object.__setattr__(self, "_block_id", block_id)
        object.__setattr__(self, "ref_reads", 0)

    @property
    def ref_cnt(self) -> int:
        object.__setattr__(self, "ref_reads", self.ref_reads + 1)
        return int(self._ref_cnt)

    @property
    def block_id(self) -> int:
        return int(self._block_id)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"the policy wrote {name}={value!r}; it must never write a block")

    def manager_write(self, ref_cnt: int) -> None:
        object.__setattr__(self, "_ref_cnt", ref_cnt)

    def __repr__(self) -> str:
        return f"ProbeBlock(ref_cnt={self._ref_cnt}, block_id={self._block_id})"


class BlockStatus(ctypes.Structure):
    """vLLM's block status layout: a ctypes structure, fields read through
    descriptors (so a policy cannot rely on plain attribute storage)."""

    _fields_ = (("ref_cnt", ctypes.c_int32), ("block_id", ctypes.c_int64))


KEYED_STEPS = (
    "insert_in_flight",
    "insert_idle",
    "finish_store",
    "start_read",
    "end_read",
    "remove",
)
"""Steps on one key, each legal only for the keys its predicate accepts."""


class Lockstep:
    """The reference policy and the model driven side by side, the way the
    manager drives a policy (spec/sources.md, C1-C12)."""

    def __init__(self) -> None:
        self.policy: LRUCachePolicy[Hashable, ProbeBlock] = LRUCachePolicy(cache_capacity=8)
        self.state = State(capacity=8)
        self.blocks: dict[int, ProbeBlock] = {}
        self.next_id = 0

    def write(self, key: int, ref_cnt: int) -> None:
        """The manager writes ref_cnt through the block; the model learns it."""
        self.blocks[key].manager_write(ref_cnt)
        self.state = State({**self.state.refs, key: ref_cnt}, list(self.state.idle), 8)

    def candidates(self, step: str) -> list[int]:
        s = self.state
        legal: Callable[[int], bool] = {
            "insert_in_flight": lambda k: can_insert(s, k, IN_FLIGHT),
            "insert_idle": lambda k: can_insert(s, k, IDLE),
            "finish_store": lambda k: can_finish_store(s, k),
            "start_read": lambda k: can_start_read(s, k),
            "end_read": lambda k: can_end_read(s, k),
            "remove": lambda k: can_remove(s, k),
        }[step]
        return [k for k in ALL_KEYS if legal(k)]

    def mentioned_keys(self) -> st.SearchStrategy[int]:
        """Any key, but present ones (idle ones above all) more often than
        chance, so that touch and evict reorder and skip real entries."""
        if not self.state.refs:
            return keys()
        return st.one_of(
            st.sampled_from(sorted(self.state.idle or self.state.refs)),
            st.sampled_from(sorted(self.state.refs)),
            keys(),
        )

    def step(self, data: st.DataObject) -> None:
        steps = [s for s in KEYED_STEPS if self.candidates(s)]
        # Weights: stores twice as likely, so idle keys pile up for touch
        # and evict to reorder and take.
        steps += [s for s in ("insert_in_flight", "insert_idle", "finish_store") if s in steps]
        steps += ["touch"] * 3 + ["evict"] * 2 + ["get"]
        step = data.draw(st.sampled_from(steps), label="step")
        if data.draw(st.integers(min_value=0, max_value=29), label="clear?") == 0:
            step = "clear"  # rare: it throws the built-up state away
        event(step)
        if step in KEYED_STEPS:
            key = data.draw(st.sampled_from(self.candidates(step)), label="key")
            note(f"{step}({key})")
            getattr(self, step)(key)
        elif step == "touch":
            touched = data.draw(st.lists(self.mentioned_keys(), max_size=6), label="keys")
            note(f"touch({touched})")
            self.policy.touch([offload_key(k) for k in touched])
            self.state = operations.touch(self.state, touched)
        elif step == "evict":
            self.evict(data)
        elif step == "get":
            key = data.draw(keys(), label="key")
            assert self.policy.get(offload_key(key)) is self.blocks.get(key)
        else:
            note("clear()")
            self.policy.clear()
            self.state = operations.clear(self.state)
            self.blocks.clear()

    def insert_in_flight(self, key: int) -> None:
        self.insert(key, IN_FLIGHT)

    def insert_idle(self, key: int) -> None:
        self.insert(key, IDLE)

    def insert(self, key: int, ref_cnt: int) -> None:
        block = ProbeBlock(ref_cnt, self.next_id)
        self.next_id += 1
        self.policy.insert(offload_key(key), block)
        self.state = operations.insert(self.state, key, ref_cnt)
        self.blocks[key] = block

    def finish_store(self, key: int) -> None:
        self.write(key, IDLE)
        self.policy.mark_evictable(offload_key(key))
        self.state = operations.mark_evictable(self.state, key)

    def start_read(self, key: int) -> None:
        if can_mark_non_evictable(self.state, key):
            self.policy.mark_non_evictable(offload_key(key))
            self.state = operations.mark_non_evictable(self.state, key)
        self.write(key, self.state.refs[key] + 1)

    def end_read(self, key: int) -> None:
        self.write(key, self.state.refs[key] - 1)
        if self.state.refs[key] == IDLE:
            self.policy.mark_evictable(offload_key(key))
            self.state = operations.mark_evictable(self.state, key)

    def remove(self, key: int) -> None:
        self.policy.remove(offload_key(key))
        self.state = operations.remove(self.state, key)
        del self.blocks[key]

    def evict(self, data: st.DataObject) -> None:
        n = data.draw(st.integers(min_value=0, max_value=4), label="n")
        protected = data.draw(st.frozensets(self.mentioned_keys(), max_size=4), label="protected")
        assert can_evict(self.state, n, protected)
        note(f"evict({n}, {sorted(protected)})")
        got = self.policy.evict(n, {offload_key(k) for k in protected})
        self.state, victims = operations.evict(self.state, n, protected)
        if victims is None:
            assert got is None, f"evict({n}) gave {got}, the model gives None"
            return
        assert got is not None, f"evict({n}) gave None, the model evicts {victims}"
        assert [k for k, _ in got] == [offload_key(k) for k in victims]
        for (_, block), k in zip(got, victims, strict=True):
            assert block is self.blocks.pop(k), "evict must return the very inserted block"

    def check(self) -> None:
        for k in ALL_KEYS:
            assert self.policy.get(offload_key(k)) is self.blocks.get(k), f"get({k})"
        # White-box: the seed's own tests read evictable_blocks, least recent first.
        assert list(self.policy.evictable_blocks) == [offload_key(k) for k in self.state.idle]
        assert all(b._ref_cnt == self.state.refs[k] for k, b in self.blocks.items())


@settings(max_examples=150)
@given(st.data())
def test_reference_agrees_with_the_model_on_legal_call_sequences(data: st.DataObject) -> None:
    run = Lockstep()
    for _ in range(data.draw(st.integers(min_value=0, max_value=50), label="steps")):
        run.step(data)
        run.check()


# accepted blocks -------------------------------------------------------------


def test_reference_never_writes_block_fields() -> None:
    policy: LRUCachePolicy[int, ProbeBlock] = LRUCachePolicy(cache_capacity=4)
    blocks = [ProbeBlock(IN_FLIGHT, i) for i in range(4)]
    for i, block in enumerate(blocks):
        policy.insert(i, block)
    for i in (0, 1, 2):
        blocks[i].manager_write(IDLE)
        policy.mark_evictable(i)
    policy.touch([2, 3, 9, 2])
    policy.mark_non_evictable(1)
    blocks[1].manager_write(1)
    assert policy.evict(1, {2}) == [(0, blocks[0])]
    policy.remove(3)
    policy.clear()
    # Any write would have raised inside the policy; values are as written.
    assert [(b._ref_cnt, b.block_id) for b in blocks] == [(0, 0), (1, 1), (0, 2), (-1, 3)]


def test_probe_block_refuses_a_policy_write() -> None:
    block = ProbeBlock(IDLE, 7)
    with pytest.raises(AttributeError, match="never write"):
        block.ref_cnt = 1  # type: ignore[misc]


def test_reference_accepts_ctypes_block_status() -> None:
    policy: LRUCachePolicy[bytes, BlockStatus] = LRUCachePolicy(cache_capacity=3)
    blocks = [BlockStatus(ref_cnt=-1, block_id=100 + i) for i in range(3)]
    for i, block in enumerate(blocks):
        policy.insert(offload_key(i), block)
        assert policy.get(offload_key(i)) is block
    for i, block in enumerate(blocks):
        block.ref_cnt = 0
        policy.mark_evictable(offload_key(i))
    policy.touch([offload_key(0)])
    evicted = policy.evict(2, set())
    assert evicted is not None
    assert [(k, b) for k, b in evicted] == [
        (offload_key(1), blocks[1]),
        (offload_key(2), blocks[2]),
    ]
    assert all(b is blocks[i] for (_, b), i in zip(evicted, (1, 2), strict=True))
    assert [(b.ref_cnt, b.block_id) for b in blocks] == [(0, 100), (0, 101), (0, 102)]


# the seed's strictness ---------------------------------------------------------


def ready_policy() -> tuple[LRUCachePolicy[int, ProbeBlock], list[ProbeBlock]]:
    """Key 0 in flight, 1 idle, 2 being read, 3 at ref_cnt 0 but not marked."""
    policy: LRUCachePolicy[int, ProbeBlock] = LRUCachePolicy(cache_capacity=4)
    blocks = [ProbeBlock(IN_FLIGHT, i) for i in range(4)]
    for i, block in enumerate(blocks):
        policy.insert(i, block)
    for i in (1, 2):
        blocks[i].manager_write(IDLE)
        policy.mark_evictable(i)
    policy.mark_non_evictable(2)
    blocks[2].manager_write(1)
    blocks[3].manager_write(IDLE)
    return policy, blocks


@pytest.mark.parametrize("key", [0, 2, 3, 99], ids=["in-flight", "read", "unmarked", "absent"])
def test_mark_non_evictable_of_a_non_idle_key_raises_key_error(key: int) -> None:
    policy, _ = ready_policy()
    with pytest.raises(KeyError):
        policy.mark_non_evictable(key)
    assert list(policy.evictable_blocks) == [1]


def test_remove_of_an_absent_key_raises_key_error() -> None:
    policy, blocks = ready_policy()
    with pytest.raises(KeyError):
        policy.remove(99)
    policy.remove(1)
    with pytest.raises(KeyError):
        policy.remove(1)
    assert [policy.get(i) for i in range(4)] == [blocks[0], None, blocks[2], blocks[3]]


def test_mark_evictable_of_an_idle_key_keeps_its_place() -> None:
    # spec/sources.md I11: the seed's OrderedDict assignment does not move the key.
    policy, blocks = ready_policy()
    blocks[3].manager_write(IDLE)
    policy.mark_evictable(3)
    policy.mark_evictable(1)
    assert list(policy.evictable_blocks) == [1, 3]


# cost, by counting ---------------------------------------------------------------


class CountingSet(frozenset[Any]):
    """A protected set that counts membership tests."""

    tests = 0

    def __contains__(self, item: object) -> bool:
        type(self).tests += 1
        return super().__contains__(item)


def crowded_policy(
    policy_cls: type[LRUCachePolicy[int, ProbeBlock]] = LRUCachePolicy,
) -> tuple[LRUCachePolicy[int, ProbeBlock], list[ProbeBlock]]:
    """5,000 in-flight and 5,000 pinned blocks (keys 0..9999), then five idle
    ones (keys 10000..10004, least recent first); read counters at zero."""
    policy = policy_cls(cache_capacity=10_005)
    blocks = [ProbeBlock(IN_FLIGHT, i) for i in range(10_005)]
    for i, block in enumerate(blocks):
        policy.insert(i, block)
    for i in range(5_000, 10_005):
        blocks[i].manager_write(IDLE)
        policy.mark_evictable(i)
    for i in range(5_000, 10_000):
        policy.mark_non_evictable(i)
        blocks[i].manager_write(1)
    for block in blocks:
        object.__setattr__(block, "ref_reads", 0)
    return policy, blocks


def pinned_reads(blocks: list[ProbeBlock]) -> int:
    return sum(b.ref_reads for b in blocks[:10_000])


def test_evict_looks_only_at_idle_keys() -> None:
    policy, blocks = crowded_policy()
    CountingSet.tests = 0
    protected = CountingSet({10_000, 10_001, 5, 123_456})
    evicted = policy.evict(2, protected)
    assert evicted == [(10_002, blocks[10_002]), (10_003, blocks[10_003])]
    assert pinned_reads(blocks) == 0, "evict read the ref_cnt of pinned or in-flight blocks"
    # At most one membership test per victim plus one per protected idle key skipped.
    assert CountingSet.tests <= 2 + 2
    assert policy.evict(3, CountingSet({10_000})) is None  # only 10004 is eligible
    assert pinned_reads(blocks) == 0


def test_other_operations_look_at_no_other_block() -> None:
    policy, blocks = crowded_policy()
    extra = ProbeBlock(IN_FLIGHT, 20_000)
    policy.insert(20_000, extra)
    extra.manager_write(IDLE)
    policy.mark_evictable(20_000)
    policy.touch([20_000, 10_004, 3, 7_000])
    policy.mark_non_evictable(20_000)
    policy.get(20_000)
    policy.remove(20_000)
    assert pinned_reads(blocks) == 0
    assert sum(b.ref_reads for b in blocks[10_000:]) <= 5


class ScanningLRU(LRUCachePolicy[int, ProbeBlock]):
    """A planted slow evict (the V9/C15 shape): it checks every block first."""

    def evict(self, n: int, protected: Any) -> Any:
        if sum(1 for b in self.blocks.values() if b.ref_cnt == 0) < n:
            return None
        return super().evict(n, protected)


def test_the_cost_probe_catches_a_scan_of_pinned_blocks() -> None:
    policy, blocks = crowded_policy(ScanningLRU)
    assert policy.evict(1, set()) == [(10_000, blocks[10_000])]
    assert pinned_reads(blocks) == 10_000
