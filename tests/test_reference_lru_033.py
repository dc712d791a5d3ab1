"""The reference request-ranked LRU (policyspec.reference.LRU033CachePolicy),
one behaviour of vLLM 0.33.0's LRU per test, called directly. That it
answers every call as vLLM's own LRU is tests/test_vllm_differential.py's.
"""

from __future__ import annotations

import pytest

from policyspec.reference import LRU033CachePolicy
from policyspec.vllm.standins.keys import ReqContext
from policyspec.vllm.standins.policies import ChunkStatus

Policy = LRU033CachePolicy[str, ChunkStatus]


def ctx(req_id: str, **positions: int) -> ReqContext:
    context = ReqContext(req_id)
    for key, position in positions.items():
        context.set_offload_key_position(key, position)
    return context


def idle(policy: Policy, key: str, context: ReqContext) -> None:
    """Insert ``key`` as the manager does, then complete its store."""
    chunk = ChunkStatus(len(policy.chunks))
    policy.insert(key, chunk, context)
    chunk.ref_cnt = 0
    policy.mark_evictable(key)


def order(policy: Policy) -> list[str]:
    """The eviction order of every idle key, leaving the policy as it was."""
    return [key for _, key in policy.idle]


def drain(policy: Policy) -> list[str]:
    victims = policy.evict(len(policy.idle), set())
    assert victims is not None
    return [key for key, _ in victims]


def test_a_requests_tails_go_before_its_heads_whatever_the_store_order() -> None:
    policy = Policy(8)
    request = ctx("r", a=16, b=32, c=48)
    for key in ("b", "a", "c"):  # stored out of order
        idle(policy, key, request)
    assert drain(policy) == ["c", "b", "a"]


def test_one_rank_per_request_across_batches_and_older_requests_first() -> None:
    policy = Policy(8)
    first, second = ctx("1", a=16, b=32), ctx("2", x=16)
    idle(policy, "a", first)
    idle(policy, "x", second)
    idle(policy, "b", first)  # a later batch of the first request
    assert order(policy) == ["b", "a", "x"]


def test_a_key_without_position_gets_a_fresh_rank() -> None:
    policy = Policy(8)
    request = ctx("r", a=16)
    idle(policy, "a", request)
    idle(policy, "n", request)  # no position: newer than the request's rank
    idle(policy, "m", ctx("s"))
    assert order(policy) == ["a", "n", "m"]


def test_finish_commits_fresh_ranks_tail_first_so_the_head_is_most_recent() -> None:
    policy = Policy(8)
    request = ctx("r", a=16, b=32)
    idle(policy, "a", request)
    idle(policy, "b", request)
    idle(policy, "z", ctx("s", z=16))
    policy.on_request_finished((("b", "a"),), set(), {"a", "b"}, request)
    assert order(policy) == ["z", "b", "a"]


def test_finish_keeps_the_given_order_when_a_position_is_missing() -> None:
    policy = Policy(8)
    request = ctx("r", a=16)
    idle(policy, "a", request)
    idle(policy, "b", request)
    policy.on_request_finished((("a", "b"),), set(), set(), request)
    assert order(policy) == ["b", "a"]  # reversed as given: a ends most recent


def test_touch_refreshes_present_keys_from_the_last() -> None:
    policy = Policy(8)
    for key in "abc":
        idle(policy, key, ctx(key))
    policy.touch(iter(["b", "gone", "a"]), ctx("t"))  # any iterable; absent keys ignored
    assert order(policy) == ["c", "a", "b"]


def test_access_raises_a_rank_to_the_requests_and_never_lowers_one() -> None:
    policy = Policy(8)
    idle(policy, "old", ctx("1", old=16))
    reader = ctx("2", old=16, new=32)
    policy.on_request_access([], reader)  # the reader's rank is made on first use
    idle(policy, "new", ctx("3", new=32))
    policy.on_request_access(["old", "new", "absent"], reader)
    # "old" rose to request 2's rank, "new" (request 3) was not lowered to it.
    assert order(policy) == ["old", "new"]
    assert policy.ranks["new"][0] > policy.ranks["old"][0]


def test_marking_evictable_keeps_the_rank_the_key_had() -> None:
    policy = Policy(8)
    idle(policy, "a", ctx("1", a=16))
    idle(policy, "b", ctx("2", b=16))
    policy.mark_non_evictable("a")  # pinned by a load ...
    policy.mark_evictable("a")  # ... and idle again: still the least recent
    assert order(policy) == ["a", "b"]
    with pytest.raises(KeyError):
        policy.mark_non_evictable("absent")
    policy.mark_non_evictable("a")
    with pytest.raises(KeyError):
        policy.mark_non_evictable("a")


def test_evict_is_exact_and_atomic() -> None:
    policy = Policy(8)
    for key in "abc":
        idle(policy, key, ctx(key))
    before = (dict(policy.chunks), dict(policy.ranks), list(policy.idle))
    assert policy.evict(3, {"b"}) is None
    assert (dict(policy.chunks), dict(policy.ranks), list(policy.idle)) == before
    assert policy.evict(0, set()) == []
    victims = policy.evict(2, {"b"})
    assert victims is not None and [key for key, _ in victims] == ["a", "c"]
    assert set(policy.chunks) == {"b"}


def test_equal_ranks_fall_back_on_the_keys_order() -> None:
    policy = Policy(8)
    request = ctx("r", y=16, x=16)  # two KV groups' keys at one position
    idle(policy, "y", request)
    idle(policy, "x", request)
    assert order(policy) == ["x", "y"]


def test_a_rank_from_before_clear_or_of_another_policy_is_not_reused() -> None:
    policy, other = Policy(8), Policy(8)
    request = ctx("r", a=16, b=16)
    idle(other, "a", request)  # the request's state now names the other policy
    idle(policy, "z", ctx("s", z=16))
    idle(policy, "a", request)
    assert order(policy) == ["z", "a"]  # a fresh request rank, newer than z's
    policy.clear()
    assert (policy.chunks, policy.ranks, policy.idle, policy.clock) == ({}, {}, [], 0)
    idle(policy, "w", ctx("t", w=16))
    idle(policy, "b", request)  # the request's rank is from the old generation
    assert order(policy) == ["w", "b"]


def test_remove_forgets_the_key_and_is_strict() -> None:
    policy = Policy(8)
    idle(policy, "a", ctx("r"))
    policy.remove("a")
    assert policy.get("a") is None and order(policy) == []
    with pytest.raises(KeyError):
        policy.remove("a")
