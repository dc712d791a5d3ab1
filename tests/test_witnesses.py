"""Witnesses an author believes: the minimiser forgets a
key's padding life, the manager's own findings shrink through a replay with
its bookkeeping, a metamorphic witness keeps only the added calls it needs,
and a fault that needs a full cache is shown at a small capacity.

The corpus-wide figures (median and longest trace at each budget) are
measured by ``python -m benchmarks --only detection``, not asserted here.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from policyspec.adapters import installed, subject_for_class
from policyspec.engines.metamorphic import run_metamorphic
from policyspec.findings.manager_replay import manager_fails, manager_failure
from policyspec.harness.sightings import Sightings, in_run
from policyspec.model.actions import Action, by_manager
from policyspec.model.state import IDLE, IN_FLIGHT
from policyspec.profiles import get_profile
from policyspec.reference.lru import LRUCachePolicy
from policyspec.run.context import EngineContext
from policyspec.session import run_check
from policyspec.witness.minimise import bounded_witness, coarse, drop_lives, legalized
from policyspec.witness.reproduce import failure_of

FAULTY = Path(__file__).parent / "faulty"
CORE = get_profile("core")


def _faulty(name: str) -> type:
    module_name = "witness_" + name.replace("/", "_")
    spec = importlib.util.spec_from_file_location(module_name, FAULTY / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    policy: type = module.Policy
    return policy


def _faulty_hook(name: str) -> type:
    return _faulty(f"hooks/{name}")


def _stored(*keys: int) -> list[Action]:
    return [a for k in keys for a in (("insert", k, IN_FLIGHT), ("finish_store", k))]


def test_a_key_stored_and_dropped_before_its_real_life_is_forgotten() -> None:
    # Fails when key 1 is present at the end; its first life is padding.
    padded: list[Action] = [("insert", 1, IN_FLIGHT), ("insert", 0, IN_FLIGHT),
                            ("remove", 1), ("insert", 1, IN_FLIGHT), ("get", 1)]

    def fails(trace: Sequence[Action]) -> bool:
        present: set[int] = set()
        for action in trace:
            if action[0] == "insert":
                present.add(action[1])
            elif action[0] == "remove":
                present.discard(action[1])
        return 1 in present and any(a[0] == "get" for a in trace)

    assert drop_lives(padded, fails) == (("insert", 0, IN_FLIGHT), ("insert", 1, IN_FLIGHT),
                                         ("get", 1))


def test_the_managers_idle_count_failure_replays_and_shrinks_to_a_manager_trace() -> None:
    subject = subject_for_class(_faulty("g02_drops_victims_before_notify"))
    # The third eviction's notification fails and its victim is lost.
    padding = [("touch", (5, 6)), ("get", 7)]
    trace = [*_stored(0, 1, 2, 3), *padding, ("evict", 1, frozenset()), *padding,
             ("evict", 1, frozenset()), ("evict", 1, frozenset())]
    with installed():
        failure = manager_failure(subject, CORE, 8, trace)
        assert failure is not None and failure.requirement == "MANAGER-IDLE-COUNT"
        fails = manager_fails(subject, CORE, 8, frozenset({"MANAGER-IDLE-COUNT"}))
        small, used = bounded_witness(trace, fails, fails, 500)
    assert fails(small) and by_manager(small)
    assert 0 < used <= 500
    assert len(small) <= 9, small  # three stores completed, three evictions
    assert sum(a[0] == "evict" for a in small) == 3


def test_a_trace_the_manager_cannot_make_shows_nothing_about_the_manager() -> None:
    subject = subject_for_class(_faulty("g02_drops_victims_before_notify"))
    inserted_idle: list[Action] = [("insert", k, IDLE) for k in range(3)]
    trace = [*inserted_idle, *[("evict", 1, frozenset())] * 3]
    with installed():
        assert manager_failure(subject, CORE, 8, trace) is None


def test_a_metamorphic_witness_keeps_only_the_added_calls_it_needs() -> None:
    subject = subject_for_class(_faulty("failed_evict_reorders"))
    with installed(), in_run(Sightings(0.0)):
        run = run_metamorphic(EngineContext(subject, CORE, 30.0, 0, 64, count=6))
    finding = next(f for f in run.findings if f.requirement == "EVICT-ATOMIC")
    assert len(finding.trace) <= 10, finding.trace
    keys = {a[1] for a in finding.trace if a[0] == "insert"}
    assert keys == set(range(len(keys))), finding.trace  # renamed 0, 1, 2, ...
    # One evict that must fail, of all those the relation adds after every step.
    assert sum(a[0] == "evict" for a in finding.trace) <= 3, finding.trace


class FullCacheShortchanges(LRUCachePolicy[Any, Any]):
    """Evicts one victim too few once every slot is taken: a witness needs a
    full cache, 2 x capacity + 1 steps at the least."""

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        full = len(self.blocks) >= self.cache_capacity
        victims = super().evict(n, protected)
        if full and victims and n > 1:
            victim = victims.pop()
            self.insert(*victim)
            self.mark_evictable(victim[0])
        return victims


def test_a_fault_that_needs_a_full_cache_is_shown_at_a_small_capacity() -> None:
    report = run_check(subject_for_class(FullCacheShortchanges), CORE, budget=10.0,
                       engines=("fast",))
    failure = next(f for f in report.failures if f.requirement == "EVICT-EXACT-N")
    assert len(failure.trace) <= 25, failure.trace
    # at a capacity the fast engine drew or the minimiser found, below the run's
    assert failure.capacity is not None and failure.capacity < 64, failure.repro


class _CutsProtected(LRUCachePolicy[Any, Any]):
    """Honours only the 1,000 smallest protected keys (a deterministic cut,
    unlike the corpus file's, which cuts in the set's iteration order)."""

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        return super().evict(n, set(sorted(protected)[:1000]))


def test_a_long_size_trace_is_cut_down_to_the_keys_its_fault_needs() -> None:
    # 302 stored keys, all but 1001 protected, touched and looked up; the
    # fault needs only the protected key past the cut (the largest of the
    # 1,001 real keys) and 1001 (unprotected, so that an eviction of 2 has a
    # second victim): coarse must drop the rest in few replays.
    subject = subject_for_class(_CutsProtected)
    past = max(range(1001), key=subject.make_key)
    padding = [k for k in range(300) if k != past]
    trace: list[Action] = [*_stored(*padding, past, 1001), ("touch", tuple(padding)),
                           ("get", 5), ("evict", 2, frozenset(range(1001)))]

    def fails(candidate: Sequence[Action]) -> bool:
        failure = failure_of(subject, CORE, 2048, candidate, observe=False,
                             fatal=lambda rid: rid == "EVICT-UNPROTECTED")
        return failure is not None and failure.requirement == "EVICT-UNPROTECTED"

    assert fails(trace)
    cut = coarse(trace, fails, tries=60)
    assert cut == (*_stored(past, 1001), trace[-1]), cut
    # The harness says which keys the wrong eviction returned; with them
    # one replay is enough.
    failure = failure_of(subject, CORE, 2048, trace, observe=False)
    assert failure is not None and sorted(failure.answered) == sorted((past, 1001))
    assert coarse(trace, fails, tries=1, keep=failure.answered) == cut


def test_a_rank_kept_across_a_clear_is_blamed_on_the_clear() -> None:
    # The witness the request-memory engine finds: request 2 is seen before
    # the clear and stores and finishes after it; the order first differs
    # at its finish (culprit names LRU033-FINISH-COMMIT), but giving the
    # requests fresh ids after the clear makes the trace pass, so the cause
    # is the state kept from before the clear.
    from policyspec.findings.finish import _stale_request

    profile = get_profile("lru-0.33")
    trace: tuple[Action, ...] = (
        ("insert", 0, IN_FLIGHT, 1), ("on_request_access", 2, (1,)),
        ("on_request_access", 3, (2,)), ("clear",), ("insert", 3, IN_FLIGHT, 2),
        ("finish_store", 3), ("set_positions", 3, ((1, 1),)), ("insert", 1, IN_FLIGHT, 3),
        ("finish_store", 1), ("on_request_finished", 2, ((3,),), frozenset({3}), frozenset()),
        ("evict", 1, frozenset()),
    )
    faulty = subject_for_class(_faulty_hook("lru033_rank_survives_clear"))
    failure = failure_of(faulty, profile, 64, trace)
    assert failure is not None and failure.requirement.startswith("LRU033-"), failure
    assert _stale_request(faulty, profile, 64, trace, "LRU033-FINISH-COMMIT") == (
        "LRU033-CLEAR-RESET")
    # A fault of the finish itself stays blamed on the finish, though a
    # request ran before a clear (renaming it changes nothing).
    commits = subject_for_class(_faulty_hook("lru033_commits_head_first"))
    head_first: tuple[Action, ...] = (
        ("on_request_access", 1, (5,)), ("clear",), ("insert", 0, IN_FLIGHT, 1),
        ("insert", 1, IN_FLIGHT, 1), ("finish_store", 0), ("finish_store", 1),
        ("on_request_finished", 1, ((0, 1),), frozenset({0, 1}), frozenset()),
        ("evict", 1, frozenset()),
    )
    assert failure_of(commits, profile, 64, head_first) is not None
    assert _stale_request(commits, profile, 64, head_first, "LRU033-FINISH-COMMIT") is None


def test_keys_of_a_second_kv_group_are_renumbered_into_the_first_when_the_fault_stays() -> None:
    # A second group's keys start at GROUP_STRIDE (16,777,216): shown as such
    # they read as noise. The fault (the get names the second insert's key,
    # other than the first's) ignores groups; the other needs group 1.
    stride = 1 << 24
    trace: list[Action] = [("insert", stride + 5, IN_FLIGHT), ("insert", 9, IN_FLIGHT),
                           ("get", 9)]

    def fails(candidate: Sequence[Action]) -> bool:
        return len(candidate) == 3 and candidate[2][1] == candidate[1][1] != candidate[0][1]

    def fails_in_group_one(candidate: Sequence[Action]) -> bool:
        return fails(candidate) and candidate[0][1] >= stride

    small, _ = bounded_witness(trace, fails, fails, 1000)
    assert small == (("insert", 0, IN_FLIGHT), ("insert", 1, IN_FLIGHT), ("get", 1))
    kept, _ = bounded_witness(trace, fails_in_group_one, fails_in_group_one, 1000)
    assert kept == (("insert", stride, IN_FLIGHT), ("insert", 0, IN_FLIGHT), ("get", 0))


def test_a_candidate_whose_late_steps_never_ran_is_made_legal_without_failing() -> None:
    # A shrinking candidate fails at its evict; the loads after it never ran
    # and name a key it never stored, or end a load that never started.
    candidate = (("insert", 0, 0), ("evict", 1, frozenset()), ("start_read", 5),
                 ("end_read", 6), ("start_read", 5))
    made = legalized(candidate)
    assert made[:3] == (("insert", 0, -1), ("finish_store", 0), ("evict", 1, frozenset()))
    assert made[3:] == candidate[2:]
