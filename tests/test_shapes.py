"""Input shapes (spec/touch.md "Shapes of keys", spec/evict.md "Shape of
protected"): the harness and the fast driver pass every shape a caller
passes, chosen by the call itself (policyspec.harness.shapes), so a policy
that accepts only the list the harness used to build fails with the id of
the operation, and a correct policy passes whatever the shape."""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

import pytest

from policyspec.adapters import subject_for_class
from policyspec.harness.shapes import KEY_SHAPES, SET_SHAPES, keys_shape, passed, set_shape
from policyspec.profiles import get_profile
from policyspec.reference import LRUCachePolicy
from policyspec.session import run_check
from policyspec.witness.render import repro

HOOKS = Path(__file__).parent / "faulty" / "hooks"


def test_every_shape_is_chosen_and_replays_choose_alike() -> None:
    calls = [tuple(keys) for n in range(4) for keys in itertools.product(range(40), repeat=n)]
    assert {keys_shape("touch", keys) for keys in calls} == set(KEY_SHAPES)
    assert {keys_shape("on_store_miss", keys) for keys in calls} == set(KEY_SHAPES)
    assert {set_shape("evict", keys) for keys in calls} == set(SET_SHAPES)
    assert [keys_shape("touch", k) for k in calls] == [keys_shape("touch", list(k)) for k in calls]


@pytest.mark.parametrize("shape", KEY_SHAPES)
def test_a_container_holds_the_keys_in_their_order(shape: str) -> None:
    calls = [tuple(keys) for n in range(4) for keys in itertools.product(range(40), repeat=n)]
    mine = [keys for keys in calls if keys_shape("touch", keys) == shape]
    assert mine
    for keys in mine:
        reals = [f"k{k}" for k in keys]
        assert list(passed(shape, list(reals))) == reals, (shape, keys)


class TouchIndexes(LRUCachePolicy[Any, Any]):
    """touch walks ``keys[::-1]``: right for a list or a tuple only."""

    def touch(self, keys: Iterable[Any]) -> None:
        super().touch(keys[::-1][::-1])  # type: ignore[index]


class TouchTwice(LRUCachePolicy[Any, Any]):
    """touch counts the idle keys named, then walks them: a generator is
    empty the second time, so nothing moves."""

    def touch(self, keys: Iterable[Any]) -> None:
        if sum(1 for key in keys if key in self.evictable_blocks):
            super().touch(keys)


class ProtectsOnlySets(LRUCachePolicy[Any, Any]):
    """evict honours ``protected`` only when it is a set."""

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        return super().evict(n, protected if isinstance(protected, set) else set())


@pytest.mark.parametrize(("policy", "profile", "requirement"), [
    (TouchIndexes, "core", "TOUCH-TOTAL"),
    (TouchTwice, "lru", "LRU-TOUCH-ORDER"),
    (ProtectsOnlySets, "core", "EVICT-UNPROTECTED"),
])
def test_a_policy_that_needs_one_shape_fails_with_the_operations_id(
    policy: type, profile: str, requirement: str
) -> None:
    report = run_check(subject_for_class(policy), get_profile(profile), budget=4.0, seed=3,
                       engines=["fast"])
    found = {f.requirement for f in report.failures if f.level == "MUST"}
    assert found == {requirement}, found


def test_the_reference_lru_accepts_every_shape() -> None:
    report = run_check(subject_for_class(LRUCachePolicy), get_profile("lru"), budget=2.0,
                       seed=3, engines=["fast", "stateful"])
    # (No failure; MUSTs only other engines judge leave the verdict unjudged.)
    assert not report.failures and not report.errors, [f.message for f in report.failures]


def test_a_hook_that_needs_a_list_fails_hook_total() -> None:
    from test_corpus import load_policy

    policy = load_policy(HOOKS / "hook_store_miss_needs_a_list.py")
    report = run_check(subject_for_class(policy), get_profile("arc"), budget=8.0, seed=3,
                       engines=["stateful"])
    found = {f.requirement for f in report.failures if f.level == "MUST"}
    assert "HOOK-TOTAL" in found, found


def test_the_repro_passes_the_shape_the_harness_passed() -> None:
    keys = next(k for k in itertools.permutations(range(6), 3)
                if keys_shape("touch", k) == "generator")
    text = repro("x:Y", 8, [("insert", k, 0) for k in keys] + [("touch", keys)])
    assert "policy.touch((k for k in [" in text
