"""The reference ARC (policyspec.reference.ARCCachePolicy): what the golden
scenarios do not show.

Its lists and target follow the arc model step by step on random
caller-legal traces; batch eviction reads each block at most once; touch and
the mark hooks accept whatever the manager sends. The golden scenarios run
on it in tests/test_arc_model.py.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Iterable

import pytest

from policyspec.adapters import subject_for_class, unwrap
from policyspec.harness import Lockstep
from policyspec.model.arc import ArcState
from policyspec.profiles import get_profile
from policyspec.reference import ARCCachePolicy
from policyspec.sources.action_source import ActionSource
from policyspec.subject import Block
from policyspec.vllm.standins.keys import ReqContext

CTX = ReqContext("req-0")
"""The request every direct call comes from (R9: insert and touch take one)."""


class CountedBlock:
    """A block whose ref_cnt reads are counted in a shared tally."""

    __slots__ = ("_ref", "block_id", "tally")

    def __init__(self, ref_cnt: int, block_id: int, tally: list[int]) -> None:
        self._ref = ref_cnt
        self.block_id = block_id
        self.tally = tally

    @property
    def ref_cnt(self) -> int:
        self.tally[0] += 1
        return self._ref

    @ref_cnt.setter
    def ref_cnt(self, value: int) -> None:
        self._ref = value


def arc_of(policy: ARCCachePolicy[Hashable, Block], harness: Lockstep) -> ArcState:
    """The reference's state in model keys, comparable with the model's."""

    def keys(entries: Iterable[Hashable]) -> list[int]:
        found = [harness.model_key(k) for k in entries]
        assert None not in found
        return [k for k in found if k is not None]

    return ArcState(
        keys(policy.t1),
        keys(policy.t2),
        keys(policy.b1),
        keys(policy.b2),
        policy.target_t1_size,
        policy.cache_capacity,
    )


@pytest.mark.parametrize("seed", range(12))
def test_lists_and_target_follow_the_model_on_random_traces(seed: int) -> None:
    capacity = 2 + seed % 5
    subject = subject_for_class(ARCCachePolicy)
    harness = Lockstep(subject, get_profile("arc"), capacity)
    source = ActionSource(random.Random(seed), pool=capacity + 4, capacity=capacity)
    policy = unwrap(harness.policy)
    assert isinstance(policy, ARCCachePolicy)
    for _ in range(400):
        harness.apply(source.next(harness.state))
        assert arc_of(policy, harness) == harness.ext, harness.trace[-1]


def _filled(size: int, tally: list[int]) -> ARCCachePolicy[int, CountedBlock]:
    """A cache of ``size`` idle blocks, the later half in T2 and the least
    recent quarter of each list pinned (a rescan would re-read those)."""
    policy: ARCCachePolicy[int, CountedBlock] = ARCCachePolicy(cache_capacity=size)
    for key in range(size):
        policy.insert(key, CountedBlock(0, key, tally), CTX)
    policy.touch(list(range(size // 2, size))[::-1], CTX)
    for key in [*range(size // 8), *range(size // 2, size // 2 + size // 8)]:
        block = policy.get(key)
        assert block is not None
        block.ref_cnt = 1
    return policy


@pytest.mark.parametrize("target", [0.0, 1e9])
def test_batch_eviction_reads_each_block_at_most_once(target: float) -> None:
    size = 2000
    tally = [0]
    policy = _filled(size, tally)
    policy.target_t1_size = min(target, size)
    tally[0] = 0
    victims = policy.evict(size // 2, set(range(size // 4, size // 4 + 10)))
    assert victims is not None and len(victims) == size // 2
    assert tally[0] <= size  # a rescan per victim reads about 250 per victim


def test_get_returns_the_inserted_object_and_none_once_evicted() -> None:
    policy: ARCCachePolicy[str, Block] = ARCCachePolicy(cache_capacity=2)
    block = Block(0, 7)
    policy.insert("a", block, CTX)
    assert policy.get("a") is block
    policy.touch(["a"], CTX)
    assert policy.get("a") is block  # from T2 now
    assert policy.evict(1, set()) == [("a", block)]
    assert policy.get("a") is None and policy.get("never") is None


def test_touch_accepts_anything_the_scheduler_sends() -> None:
    policy: ARCCachePolicy[int, Block] = ARCCachePolicy(cache_capacity=4)
    policy.insert(1, Block(-1, 0), CTX)
    policy.insert(2, Block(0, 1), CTX)
    policy.insert(3, Block(2, 2), CTX)
    policy.touch([], CTX)
    policy.touch([9, 1, 1, 2, 3, 2, 9], CTX)
    policy.touch((k for k in (3, 1)), CTX)  # any iterable, not only a list
    policy.touch((2,), CTX)
    assert list(policy.t1) == [1]  # in flight: never promoted
    assert list(policy.t2) == [3, 2]  # the tuple touched 2 last
    assert policy.b1 == {} and policy.b2 == {} and policy.target_t1_size == 0


def test_mark_hooks_do_nothing_and_remove_of_an_absent_key_is_tolerated() -> None:
    policy: ARCCachePolicy[int, Block] = ARCCachePolicy(cache_capacity=2)
    policy.insert(1, Block(0, 0), CTX)
    policy.mark_non_evictable(1)
    policy.mark_evictable(1)
    policy.mark_evictable(5)
    policy.remove(5)
    assert list(policy.t1) == [1] and not policy.t2


def test_clear_resets_lists_and_target() -> None:
    policy: ARCCachePolicy[int, Block] = ARCCachePolicy(cache_capacity=2)
    for key in (1, 2):
        policy.insert(key, Block(0, key), CTX)
    assert policy.evict(1, set()) is not None
    policy.touch([1], CTX)
    assert policy.target_t1_size == 1
    policy.clear()
    assert (policy.t1, policy.t2, policy.b1, policy.b2) == ({}, {}, {}, {})
    assert policy.target_t1_size == 0


def test_zero_capacity_trims_every_ghost() -> None:
    policy: ARCCachePolicy[int, Block] = ARCCachePolicy(cache_capacity=0)
    policy.insert(1, Block(0, 0), CTX)
    assert policy.evict(1, set()) is not None
    assert not policy.b1 and policy.target_t1_size == 0
