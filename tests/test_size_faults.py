"""The size-pattern faults of the corpus (tests/faulty/size_*.py) are real:
each policy, driven by hand through the seed API, goes wrong at the size its
docstring names and agrees with the reference LRU one step below it; and
the lockstep harness, replaying the same calls, reports at that size the
id the file's header names (after the lru profile's attribution), and
nothing one step below.

The size engine (engines/size.py) reaches them: tests/test_corpus.py runs
each file on it (``engine=size`` in its header) at capacities it draws, and
this module also checks each one at a fixed ``--capacity 4096``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from test_corpus import FAULTY, SEED, load_policy, read_header

from policyspec.adapters import subject_for_class
from policyspec.model.actions import Action
from policyspec.profiles import get_profile
from policyspec.reference import LRUCachePolicy
from policyspec.session import run_check
from policyspec.witness.explain import culprit
from policyspec.witness.reproduce import failure_of

NONE: frozenset[int] = frozenset()


@dataclass
class Block:
    """A stand-in block status: the policy only reads ``ref_cnt``."""

    ref_cnt: int
    block_id: int


Calls = list[tuple[str, tuple[Any, ...]]]
"""Seed-API calls: (method, arguments); ``insert`` gets (key, ref_cnt)."""


def play(policy_class: type, capacity: int, calls: Calls) -> list[object]:
    """What each call returned; evict results as lists of keys."""
    policy = policy_class(cache_capacity=capacity)
    seen: list[object] = []
    for index, (method, args) in enumerate(calls):
        if method == "insert":
            key, ref = args
            seen.append(policy.insert(key, Block(ref, index)))
            continue
        got = getattr(policy, method)(*args)
        seen.append([k for k, _ in got] if method == "evict" and got is not None else got)
    return seen


def idle_keys(count: int) -> Calls:
    return [("insert", (key, 0)) for key in range(count)]


def idle_actions(count: int) -> list[Action]:
    return [("insert", key, 0) for key in range(count)]


@dataclass(frozen=True)
class SizeFault:
    stem: str
    threshold: int
    """The smallest size at which the fault shows (one below, it does not)."""
    capacity: Callable[[int], int]
    calls: Callable[[int], Calls]
    """The hand-driven calls at a size."""
    trace: Callable[[int], list[Action]]
    """The same situation as caller actions, for the lockstep harness."""


def _pad(keys: Sequence[int], length: int) -> tuple[int, ...]:
    """``keys`` followed by never-inserted keys, ``length`` in all."""
    return (*keys, *range(10**6, 10**6 + length - len(keys)))


FAULTS = [
    # A touch of more than 256 keys that names a block in flight makes it idle.
    SizeFault(
        "size_touch_bulk_makes_busy_idle", 257, lambda size: 4,
        lambda size: [("insert", (0, 0)), ("insert", (1, -1)), ("touch", (list(_pad([1], size)),)),
                      ("evict", (2, set()))],
        lambda size: [("insert", 0, 0), ("insert", 1, -1), ("touch", _pad([1], size)),
                      ("evict", 1, NONE), ("evict", 1, NONE)],
    ),
    # A touch of more than 256 keys appends the named idle keys head first.
    SizeFault(
        "size_touch_bulk_keeps_named_order", 257, lambda size: 4,
        lambda size: [*idle_keys(3), ("touch", (list(_pad([0, 1], size)),)), ("evict", (3, set()))],
        lambda size: [*idle_actions(3), ("touch", _pad([0, 1], size)), ("evict", 3, NONE)],
    ),
    # len(victims) is n: no int above 256 is cached, so the loop never stops.
    SizeFault(
        "size_evict_count_compared_with_is", 257, lambda size: size + 1,
        lambda size: [*idle_keys(size + 1), ("evict", (size, set()))],
        lambda size: [*idle_actions(size + 1), ("evict", size, NONE)],
    ),
    # Only the first 1,000 protected keys are honoured.
    SizeFault(
        "size_protected_cut_at_1000", 1001, lambda size: size + 1,
        lambda size: [*idle_keys(size + 1), ("evict", (1, set(range(size))))],
        lambda size: [*idle_actions(size + 1), ("evict", 1, frozenset(range(size)))],
    ),
    # A ring of 4,096 slots, one kept free: the 4,096th idle key overwrites
    # the least recent.
    SizeFault(
        "size_ring_of_4096_drops_oldest", 4096, lambda size: size,
        lambda size: [*idle_keys(size), ("evict", (1, set())), ("touch", ([0],))],
        lambda size: [*idle_actions(size), ("touch", (0,))],
    ),
    # A touch that changes 64 idle keys rebuilds the heap from those alone.
    SizeFault(
        "size_heap_rebuild_drops_unchanged", 64, lambda size: 101,
        lambda size: [*idle_keys(100), ("touch", (list(range(1, size + 1)),)),
                      ("evict", (1, set()))],
        lambda size: [*idle_actions(100), ("touch", tuple(range(1, size + 1))),
                      ("evict", 1, NONE)],
    ),
]


def outcome(policy_class: type, fault: SizeFault, size: int) -> list[object] | str:
    """The results of the hand-driven calls, or the exception they raised."""
    try:
        return play(policy_class, fault.capacity(size), fault.calls(size))
    except Exception as error:  # a raise is a wrong result too (the reference never raises)
        return f"raised {type(error).__name__}"


@pytest.mark.parametrize("fault", FAULTS, ids=[f.stem for f in FAULTS])
def test_fault_shows_at_its_size_and_not_below(fault: SizeFault) -> None:
    policy = load_policy(FAULTY / f"{fault.stem}.py")
    below, at = fault.threshold - 1, fault.threshold
    assert outcome(policy, fault, below) == outcome(LRUCachePolicy, fault, below), (
        f"{fault.stem} already differs from the reference LRU at size {below}"
    )
    assert outcome(policy, fault, at) != outcome(LRUCachePolicy, fault, at), (
        f"{fault.stem} agrees with the reference LRU at size {at}: the planted fault is not there"
    )


@pytest.mark.parametrize("fault", FAULTS, ids=[f.stem for f in FAULTS])
def test_harness_reports_the_header_id_at_the_size(fault: SizeFault) -> None:
    header = read_header(FAULTY / f"{fault.stem}.py")
    profile = get_profile(header.profile)
    subject = subject_for_class(load_policy(header.path))
    below, at = fault.threshold - 1, fault.threshold
    # observe=False: no get of every key after every call, which at 4,097
    # keys costs seconds per replay and plays no part in these faults.
    assert failure_of(subject, profile, fault.capacity(below) + 1, fault.trace(below),
                      observe=False) is None
    trace = fault.trace(at)
    failure = failure_of(subject, profile, fault.capacity(at) + 1, trace, observe=False)
    assert failure is not None, f"{fault.stem}: no failure at size {at}"
    reported = culprit(subject, profile, fault.capacity(at) + 1, trace, failure.requirement)
    assert reported == header.requirement, (
        f"{fault.stem}: the harness reports {reported} ({failure.message[:200]}), "
        f"the header names {header.requirement}"
    )


def test_every_size_file_is_covered_here_and_run_by_the_size_engine() -> None:
    from test_corpus import SUITE_GAPS

    stems = {p.stem for p in Path(FAULTY).glob("size_*.py")}
    assert stems == {f.stem for f in FAULTS}
    for stem in stems:
        assert stem not in SUITE_GAPS, f"{stem}: the size engine catches it: no gap"
        assert read_header(FAULTY / f"{stem}.py").engines == ("size",)


@pytest.mark.parametrize("fault", FAULTS, ids=[f.stem for f in FAULTS])
def test_size_engine_catches_it_at_a_fixed_capacity_of_4096(fault: SizeFault) -> None:
    assert fault.capacity(fault.threshold) <= 4096, "a fault a cache of 4,096 blocks cannot show"
    header = read_header(FAULTY / f"{fault.stem}.py")
    report = run_check(subject_for_class(load_policy(header.path)), get_profile(header.profile),
                       budget=5.0, seed=SEED, engines=["size"], capacity=4096)
    found = {f.requirement for f in report.failures if f.level == "MUST"}
    assert header.requirement in found, (fault.stem, found)
    assert found <= {header.requirement} | header.also, (fault.stem, found)
    assert report.stats["capacity"] == 4096
