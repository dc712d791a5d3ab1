"""The golden scenarios of vLLM's own tests (spec/contract.md, vLLM's own tests), replayed
on the reference LRU and on the model: both must give the seed-era answers.

Policy level: ready blocks 3, 1, 2, 0; touch([0]); evict(3) gives [3, 1, 2].
Manager level (capacity 4): the seed-era ``test_cpu_manager`` whose stores
evict [1], then [4, 5, 2] (into ids [1, 0, 3]), then [8] (into id 3); the
regression ``test_already_stored_block_not_evicted_during_prepare_store``;
and ``test_evictable_cache_block_count``.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import pytest
from golden_manager import (
    HIT,
    HIT_PENDING,
    MISS,
    CallerContractError,
    GoldenManager,
    ModelPolicy,
)

from policyspec.reference import LRUCachePolicy
from policyspec.subject import Block, offload_key

POLICIES = pytest.mark.parametrize(
    "policy_cls", [LRUCachePolicy, ModelPolicy], ids=["reference", "model"]
)


def key(i: int) -> Hashable:
    return offload_key(i)


def keys(*ints: int) -> list[Hashable]:
    return [offload_key(i) for i in ints]


def idle_count(policy: Any) -> int:
    """How many keys the policy holds as idle (white-box, both policies)."""
    if isinstance(policy, ModelPolicy):
        return len(policy.state.idle)
    return len(policy.evictable_blocks)


@POLICIES
def test_policy_level_order_is_3_1_2(policy_cls: Any) -> None:
    policy = policy_cls(cache_capacity=4)
    blocks = {i: Block(ref_cnt=0, block_id=i) for i in (3, 1, 2, 0)}
    for i, block in blocks.items():
        policy.insert(key(i), block)
    policy.touch(keys(0))
    evicted = policy.evict(3, set())
    assert evicted is not None
    assert [k for k, _ in evicted] == keys(3, 1, 2)
    assert all(b is blocks[i] for (_, b), i in zip(evicted, (3, 1, 2), strict=True))
    assert policy.get(key(0)) is blocks[0]


@POLICIES
def test_cpu_manager_scenario(policy_cls: Any) -> None:
    m = GoldenManager.build(policy_cls, num_blocks=4)

    # 1. store [1, 2]: pending until completed, then hits.
    out = m.prepare_store(keys(1, 2))
    assert out is not None
    assert (out.keys_to_store, out.block_ids, out.evicted_keys) == (keys(1, 2), [0, 1], [])
    assert [m.lookup(k) for k in keys(1, 2)] == [HIT_PENDING, HIT_PENDING]
    assert m.take_events() == []
    m.complete_store(keys(1, 2))
    assert m.take_events() == [("stored", keys(1, 2))]
    assert [m.lookup(k) for k in keys(1, 2, 3)] == [HIT, HIT, MISS]

    # 2. store [2, 3, 4, 5]: 2 is stored already and protected; evicts [1].
    out = m.prepare_store(keys(2, 3, 4, 5))
    assert out is not None
    assert (out.keys_to_store, out.block_ids, out.evicted_keys) == (
        keys(3, 4, 5),
        [2, 3, 0],
        keys(1),
    )
    assert m.take_events() == [("evicted", keys(1))]

    # 3. store [1, 6] needs 2 evictions with 1 idle block: None, evict not called.
    calls = m.evict_calls
    assert m.prepare_store(keys(1, 6)) is None
    assert m.evict_calls == calls

    # 4. complete [2, 3, 4, 5]; load [2, 3]; with them pinned, [6, 7, 8] fails.
    m.complete_store(keys(2, 3, 4, 5))
    assert [m.lookup(k) for k in keys(1, 2, 3, 4, 5, 0)] == [MISS, HIT, HIT, HIT, HIT, MISS]
    assert m.prepare_load(keys(2, 3)) == [1, 2]
    assert m.prepare_store(keys(6, 7, 8)) is None
    assert m.evict_calls == calls

    # 5. completing the loads makes 2, 3 most recent: [6, 7, 8] evicts [4, 5, 2].
    m.complete_load(keys(2, 3))
    out = m.prepare_store(keys(6, 7, 8))
    assert out is not None
    assert (out.keys_to_store, out.block_ids, out.evicted_keys) == (
        keys(6, 7, 8),
        [1, 0, 3],
        keys(4, 5, 2),
    )

    # 6. touch([3, 6, 7]) leaves 8 least recent: storing 9 evicts [8] into id 3.
    m.complete_store(keys(6, 7, 8))
    m.touch(keys(3, 6, 7))
    out = m.prepare_store(keys(9))
    assert out is not None
    assert (out.keys_to_store, out.block_ids, out.evicted_keys) == (keys(9), [3], keys(8))

    # 7. a failed store of [7, 9]: 7 was ready and stays, 9 is removed.
    m.complete_store(keys(7, 9), success=False)
    assert [m.lookup(k) for k in keys(7, 9)] == [HIT, MISS]
    assert m.take_events() == [
        ("stored", keys(3, 4, 5)),
        ("evicted", keys(4, 5, 2)),
        ("stored", keys(6, 7, 8)),
        ("evicted", keys(8)),
    ]
    assert m.free_list == [3]


@POLICIES
def test_already_stored_block_not_evicted_during_prepare_store(policy_cls: Any) -> None:
    m = GoldenManager.build(policy_cls, num_blocks=4)
    m.prepare_store(keys(1, 2))
    m.complete_store(keys(1, 2))
    m.touch(keys(1))  # 2 is now the least recent idle key
    out = m.prepare_store(keys(2, 3, 4, 5))
    assert out is not None
    assert (out.keys_to_store, out.block_ids, out.evicted_keys) == (
        keys(3, 4, 5),
        [2, 3, 0],
        keys(1),
    )
    m.complete_store(keys(2, 3, 4, 5))
    assert m.lookup(key(2)) == HIT


@POLICIES
def test_evictable_cache_block_count(policy_cls: Any) -> None:
    m = GoldenManager.build(policy_cls, num_blocks=4)

    def count(expected: int) -> None:
        assert m.num_evictable == expected
        assert idle_count(m.policy) == expected  # spec/sources.md I15

    count(0)
    m.prepare_store(keys(1, 2, 3))
    count(0)
    m.complete_store(keys(1, 2, 3))
    count(3)
    m.prepare_load(keys(1))
    count(2)
    m.prepare_load(keys(1))  # a concurrent second load does not pin again
    count(2)
    m.complete_load(keys(1))
    count(2)
    m.complete_load(keys(1))
    count(3)
    out = m.prepare_store(keys(4, 5, 6))  # 1 free slot, 2 evictions
    assert out is not None and len(out.evicted_keys) == 2
    count(1)
    m.complete_store(keys(4, 5, 6), success=False)
    count(1)
    m.reset_cache()
    count(0)

    m.prepare_store(keys(10, 11, 12))
    m.complete_store(keys(10, 11, 12))
    m.prepare_load(keys(10, 11, 12))
    count(0)
    calls = m.evict_calls
    assert m.prepare_store(keys(14, 15)) is None
    assert m.evict_calls == calls, "the fast-fail guard must skip policy.evict"

    m.complete_load(keys(10, 11, 12))
    count(3)
    assert m.prepare_store(keys(14, 15)) is not None
    assert m.evict_calls == calls + 1
    count(2)
    m.complete_store(keys(14, 15))
    count(4)


def test_model_policy_rejects_a_caller_contract_breach() -> None:
    # The model wrapper is the caller-contract check of these scenarios: a
    # mark_evictable on a block still in flight must be refused.
    policy = ModelPolicy(cache_capacity=1)
    policy.insert(key(1), Block(ref_cnt=-1, block_id=0))
    with pytest.raises(CallerContractError):
        policy.mark_evictable(key(1))
    with pytest.raises(CallerContractError):
        policy.insert(key(1), Block(ref_cnt=-1, block_id=1))
