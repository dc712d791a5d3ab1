"""The arc refinement (spec/arc.md): its transitions, and vLLM's golden ARC
scenarios run on both the model and the reference ARC.

The golden scenarios (vLLM's ``TestARCPolicy`` and ``test_evict_until``, as
listed in the project's contract notes, section 4) are written once and run
on two backends behind a tiny stand-in for vLLM's manager: the model
(the arc profile's ``ProfileModel``, stepped as every engine steps it) and
``ARCCachePolicy``. Both must give the same victims and the same T1/T2/B1/B2.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import Any, Protocol

import pytest

from policyspec.model import arc
from policyspec.model.arc import ArcState, agrees_with, arc_well_formed
from policyspec.model.arc_profile import ARCRefinement
from policyspec.model.evict import evict_violation
from policyspec.model.state import IDLE, IN_FLIGHT, State
from policyspec.model.step import ProfileModel
from policyspec.profiles import get_profile
from policyspec.reference import ARCCachePolicy
from policyspec.registry import load_registry
from policyspec.subject import Block
from policyspec.vllm.standins.keys import ReqContext

CTX = ReqContext("req-0")
"""The request the reference ARC's calls come from (R9 API)."""

Lists = tuple[list[int], list[int], list[int], list[int]]


# -- two backends behind one small interface ------------------------------------


class Backend(Protocol):
    def insert(self, key: int, ref_cnt: int) -> None: ...
    def set_ref(self, key: int, ref_cnt: int) -> None: ...
    def mark_evictable(self, key: int) -> None: ...
    def mark_non_evictable(self, key: int) -> None: ...
    def remove(self, key: int) -> None: ...
    def touch(self, keys: Sequence[int]) -> None: ...
    def evict(self, n: int, protected: Collection[int]) -> list[int] | None: ...
    def present(self, key: int) -> bool: ...
    def ref(self, key: int) -> int: ...
    def lists(self) -> Lists: ...
    def target(self) -> float: ...
    def set_target(self, target: float) -> None: ...


class ModelBackend:
    """The spec: the arc profile's model (core state and ARC state), moved
    by ``model.step`` exactly as an engine moves it."""

    def __init__(self, capacity: int) -> None:
        self.model = ProfileModel.fresh(ARCRefinement(), capacity)

    @property
    def state(self) -> State:
        return self.model.state

    @property
    def arc(self) -> ArcState:
        arc: ArcState = self.model.ext
        return arc

    def _step(self, *call: Any) -> None:
        self.model = self.model.step(call).model

    def insert(self, key: int, ref_cnt: int) -> None:
        self._step("insert", key, ref_cnt)

    def set_ref(self, key: int, ref_cnt: int) -> None:
        self._step("set_ref", key, ref_cnt)

    def mark_evictable(self, key: int) -> None:
        self._step("mark_evictable", key)

    def mark_non_evictable(self, key: int) -> None:
        self._step("mark_non_evictable", key)

    def remove(self, key: int) -> None:
        self._step("remove", key)

    def touch(self, keys: Sequence[int]) -> None:
        self._step("touch", tuple(keys))

    def evict(self, n: int, protected: Collection[int]) -> list[int] | None:
        before = self.state
        step = self.model.step(("evict", n, frozenset(protected)))
        victims: list[int] | None = step.expected  # type: ignore[assignment]
        # The refinement's choice is always one that core allows.
        assert evict_violation(before, n, protected, victims) is None
        self.model = step.model
        assert arc_well_formed(self.arc) and agrees_with(self.arc, self.state)
        return victims

    def present(self, key: int) -> bool:
        return key in self.state.refs

    def ref(self, key: int) -> int:
        return self.state.refs[key]

    def lists(self) -> Lists:
        return list(self.arc.t1), list(self.arc.t2), list(self.arc.b1), list(self.arc.b2)

    def target(self) -> float:
        return self.arc.target

    def set_target(self, target: float) -> None:
        arc = ArcState(*self.lists(), target, self.arc.capacity)
        self.model = replace(self.model, ext=arc)


class ReferenceBackend:
    """The reference ARC, holding real block objects."""

    def __init__(self, capacity: int) -> None:
        self.policy: ARCCachePolicy[int, Block] = ARCCachePolicy(cache_capacity=capacity)
        self.blocks: dict[int, Block] = {}
        self._next_id = 0

    def insert(self, key: int, ref_cnt: int) -> None:
        self.blocks[key] = Block(ref_cnt, self._next_id)
        self._next_id += 1
        self.policy.insert(key, self.blocks[key], CTX)

    def set_ref(self, key: int, ref_cnt: int) -> None:
        self.blocks[key].ref_cnt = ref_cnt

    def mark_evictable(self, key: int) -> None:
        self.policy.mark_evictable(key)

    def mark_non_evictable(self, key: int) -> None:
        self.policy.mark_non_evictable(key)

    def remove(self, key: int) -> None:
        self.policy.remove(key)
        del self.blocks[key]

    def touch(self, keys: Sequence[int]) -> None:
        self.policy.touch(list(keys), CTX)

    def evict(self, n: int, protected: Collection[int]) -> list[int] | None:
        result = self.policy.evict(n, set(protected))
        if result is None:
            return None
        for key, block in result:
            assert block is self.blocks.pop(key)
        return [key for key, _ in result]

    def present(self, key: int) -> bool:
        block = self.policy.get(key)
        assert block is self.blocks.get(key)
        return block is not None

    def ref(self, key: int) -> int:
        return self.blocks[key].ref_cnt

    def lists(self) -> Lists:
        p = self.policy
        return list(p.t1), list(p.t2), list(p.b1), list(p.b2)

    def target(self) -> float:
        return self.policy.target_t1_size

    def set_target(self, target: float) -> None:
        self.policy.target_t1_size = target


class Manager:
    """Just enough of vLLM's CPU offloading manager (spec/sources.md, C1-C12) to replay
    the golden scenarios: it writes ref_cnt and calls the policy as vLLM's
    manager does, including the idle-count guard before evict (C6b)."""

    def __init__(self, backend: Backend, capacity: int) -> None:
        self.backend = backend
        self.capacity = capacity
        self.held = 0
        self.idle = 0
        self.evict_calls = 0

    def prepare_store(self, keys: Sequence[int]) -> list[int] | None:
        to_store = [k for k in keys if not self.backend.present(k)]
        n = len(to_store) - (self.capacity - self.held)
        evicted: list[int] = []
        if n > 0:
            if n > self.idle:
                return None
            self.evict_calls += 1
            found = self.backend.evict(n, set(keys))
            if found is None:
                return None
            evicted = found
            self.held -= n
            self.idle -= n
        for key in to_store:
            self.backend.insert(key, IN_FLIGHT)
            self.held += 1
        return evicted

    def complete_store(self, keys: Sequence[int], success: bool = True) -> None:
        for key in keys:
            if not self.backend.present(key) or self.backend.ref(key) != IN_FLIGHT:
                continue
            if success:
                self.backend.set_ref(key, IDLE)
                self.backend.mark_evictable(key)
                self.idle += 1
            else:
                self.backend.remove(key)
                self.held -= 1

    def store(self, keys: Sequence[int]) -> list[int] | None:
        """prepare_store then a successful complete_store."""
        evicted = self.prepare_store(keys)
        if evicted is not None:
            self.complete_store(keys)
        return evicted

    def prepare_load(self, keys: Sequence[int]) -> None:
        for key in keys:
            ref = self.backend.ref(key)
            assert ref >= IDLE
            if ref == IDLE:
                self.backend.mark_non_evictable(key)
                self.idle -= 1
            self.backend.set_ref(key, ref + 1)

    def complete_load(self, keys: Sequence[int]) -> None:
        for key in keys:
            ref = self.backend.ref(key) - 1
            self.backend.set_ref(key, ref)
            if ref == IDLE:
                self.backend.mark_evictable(key)
                self.idle += 1

    def lookup(self, key: int) -> str:
        if not self.backend.present(key):
            return "MISS"
        return "HIT" if self.backend.ref(key) >= IDLE else "HIT_PENDING"


Make = type[ModelBackend] | type[ReferenceBackend]
BACKENDS: dict[str, Make] = {"model": ModelBackend, "reference": ReferenceBackend}


@pytest.fixture(params=sorted(BACKENDS))
def make(request: pytest.FixtureRequest) -> Make:
    """Each golden scenario runs once on the model, once on the reference."""
    return BACKENDS[request.param]


def manager(make: Make, capacity: int = 4) -> Manager:
    return Manager(make(capacity), capacity)


def ready_policy(make: Make, keys: Sequence[int], capacity: int = 4) -> Backend:
    """A policy holding ``keys`` inserted idle, in that order (the
    policy-level tests of vLLM's test_evict_until)."""
    backend: Backend = make(capacity)
    for key in keys:
        backend.insert(key, IDLE)
    return backend


# -- golden scenarios: TestARCPolicy ---------------------------------------------


def test_new_blocks_enter_t1_and_a_touch_promotes_them_to_t2(make: Make) -> None:
    m = manager(make)
    assert m.store([1, 2]) == []
    assert m.backend.lists() == ([1, 2], [], [], [])
    m.backend.touch([1])
    assert m.backend.lists() == ([2], [1], [], [])


def test_touch_ordering_walks_keys_last_to_first_then_store_evicts_t1(make: Make) -> None:
    m = manager(make)
    m.store([1, 2, 3, 4])
    m.backend.touch([3, 4])
    assert m.backend.lists()[:2] == ([1, 2], [4, 3])
    m.backend.touch([1, 3, 4])
    # Walked from 4 back to 1: the first key named ends up most recent.
    assert m.backend.lists()[:2] == ([2], [4, 3, 1])
    assert m.store([5]) == [2]
    assert m.backend.lists() == ([5], [4, 3, 1], [2], [])


def test_t1_at_or_above_target_gives_the_victim_and_it_becomes_a_b1_ghost(make: Make) -> None:
    m = manager(make)
    m.store([1, 2, 3, 4])
    m.backend.touch([3, 4])
    m.backend.set_target(1)
    assert m.store([5]) == [1]
    assert m.backend.lists() == ([2, 5], [4, 3], [1], [])


def test_full_scenario(make: Make) -> None:
    m = manager(make)
    m.store([1, 2])
    assert m.store([3, 4, 5]) == [1]
    m.backend.touch([2, 3])
    assert m.backend.lists() == ([4, 5], [3, 2], [1], [])
    assert m.store([6]) == [4]
    assert m.lookup(2) == "HIT" and m.lookup(3) == "HIT"
    assert m.backend.lists() == ([5, 6], [3, 2], [1, 4], [])


def test_a_b1_ghost_hit_raises_the_target(make: Make) -> None:
    m = manager(make, capacity=2)
    m.store([1, 2])
    assert m.store([3]) == [1]
    assert m.backend.lists()[2] == [1]
    assert m.backend.target() == 0
    m.backend.touch([1])
    assert m.backend.target() == 1


def test_ghost_lists_stay_within_capacity(make: Make) -> None:
    m = manager(make, capacity=2)
    m.store([1, 2])
    for key in range(3, 20):  # 17 extra stores
        assert m.store([key]) is not None
        if key % 2:
            m.backend.touch([key])  # half of the keys reach T2, so B2 fills too
        _, _, b1, b2 = m.backend.lists()
        assert len(b1) <= 2 and len(b2) <= 2
    _, _, b1, b2 = m.backend.lists()
    assert len(b1) == 2 and len(b2) == 2  # trimmed to the capacity, not below


def test_failed_store_keeps_the_ghost_its_eviction_made_and_leaves_no_trace(
    make: Make,
) -> None:
    m = manager(make, capacity=2)
    m.store([1, 2])
    assert m.prepare_store([3]) == [1]
    m.complete_store([3], success=False)
    t1, t2, b1, b2 = m.backend.lists()
    assert b1 == [1]
    assert 3 not in t1 + t2 + b1 + b2
    assert m.lookup(3) == "MISS"


def test_pinned_blocks_are_not_evicted_until_their_load_completes(make: Make) -> None:
    m = manager(make, capacity=2)
    m.store([1, 2])
    m.prepare_load([1, 2])
    assert m.prepare_store([3]) is None  # the manager's guard: nothing idle
    assert m.evict_calls == 0
    m.complete_load([2])
    # One idle block, but the offer protects it: the policy itself says None.
    before = (m.backend.lists(), m.backend.target())
    assert m.prepare_store([3, 2]) is None
    assert m.evict_calls == 1
    assert (m.backend.lists(), m.backend.target()) == before
    m.complete_load([1])
    assert m.store([3]) == [1]
    assert m.lookup(2) == "HIT" and m.lookup(3) == "HIT"


# -- golden scenarios: test_evict_until, policy level ---------------------------------


def test_arc_t1_selected(make: Make) -> None:
    policy = ready_policy(make, [0, 1, 2, 3])
    policy.touch([2])
    policy.set_target(1)
    assert policy.evict(1, set()) == [0]
    assert policy.lists() == ([1, 3], [2], [0], [])


def test_arc_t2_selected(make: Make) -> None:
    policy = ready_policy(make, [0, 1, 2, 3])
    policy.touch([2, 3])
    assert policy.lists()[:2] == ([0, 1], [3, 2])
    policy.set_target(3)  # above |T1| = 2
    assert policy.evict(1, set()) == [3]
    assert policy.lists() == ([0, 1], [2], [], [3])


def test_arc_ghost_semantics_every_victim_becomes_a_ghost_of_its_list(make: Make) -> None:
    policy = ready_policy(make, [0, 1, 2, 3])
    policy.touch([1, 3])
    policy.set_target(2)
    # T1=[0, 2], T2=[3, 1]: T1 gives while it holds >= 2, then T2.
    assert policy.evict(4, set()) == [0, 3, 1, 2]
    assert policy.lists() == ([], [], [0, 2], [3, 1])


# -- the selection rule's corners -----------------------------------------------------


def test_t1_falls_back_when_t2_has_no_candidate(make: Make) -> None:
    policy = ready_policy(make, [1, 2, 3])
    policy.touch([3])
    policy.mark_non_evictable(3)  # T2's only block starts being read
    policy.set_ref(3, 1)
    policy.set_target(3)  # |T1| = 2 < 3: T2 is preferred
    assert policy.evict(1, set()) == [1]  # vllm PR #55461 (bug V4)


def test_t2_gives_when_t1_has_no_candidate(make: Make) -> None:
    policy = ready_policy(make, [1, 2, 3])
    policy.touch([3])
    assert policy.evict(2, {1}) == [2, 3]  # target 0 prefers T1; 1 is protected


def test_the_t1_count_includes_blocks_that_cannot_be_evicted(make: Make) -> None:
    policy = ready_policy(make, [1, 2, 3])
    policy.insert(4, IN_FLIGHT)
    policy.touch([3])
    policy.set_target(3)
    # T1 = [1, 2, 4] counts 3 >= 3 although 4 is in flight: T1 gives first;
    # then 2 are left, below the target, so T2 gives.
    assert policy.evict(2, set()) == [1, 3]


def test_evict_zero_returns_empty_and_changes_nothing(make: Make) -> None:
    policy = ready_policy(make, [1, 2])
    assert policy.evict(0, set()) == []
    assert policy.lists() == ([1, 2], [], [], [])


def test_a_not_ready_block_touched_stays_in_t1_as_most_recent(make: Make) -> None:
    policy = ready_policy(make, [1])
    policy.insert(2, IN_FLIGHT)
    policy.insert(3, IDLE)
    policy.touch([2])
    assert policy.lists()[:2] == ([1, 3, 2], [])
    policy.touch([3, 1])
    assert policy.lists()[:2] == ([2], [1, 3])


def test_a_block_being_read_is_ready_and_a_touch_promotes_it(make: Make) -> None:
    policy = ready_policy(make, [1, 2])
    policy.mark_non_evictable(1)
    policy.set_ref(1, 1)
    policy.touch([1])
    assert policy.lists()[:2] == ([2], [1])


def test_insert_erases_the_ghost_and_remove_makes_none(make: Make) -> None:
    policy = ready_policy(make, [1, 2], capacity=2)
    assert policy.evict(1, set()) == [1]
    policy.insert(1, IN_FLIGHT)
    assert policy.lists() == ([2, 1], [], [], [])
    policy.remove(1)
    assert policy.lists() == ([2], [], [], [])


def test_a_b2_ghost_hit_lowers_the_target_by_the_ghost_ratio(make: Make) -> None:
    policy = ready_policy(make, [1, 2, 3, 4, 5], capacity=8)
    policy.touch([5, 4, 3])
    policy.set_target(8)  # prefer T2 while T1 holds fewer than 8
    assert policy.evict(3, set()) == [3, 4, 5]
    policy.set_target(0)
    assert policy.evict(2, set()) == [1, 2]
    assert policy.lists() == ([], [], [1, 2], [3, 4, 5])
    policy.set_target(4)
    policy.touch([4])  # |B1| / |B2| = 2 / 3 < 1: the step is 1
    assert policy.target() == 3
    policy.touch([1])  # |B2| / |B1| = 3 / 2: the step is 1.5
    assert policy.target() == 4.5
    assert policy.lists()[2:] == ([2, 1], [3, 5, 4])


def test_the_target_stays_between_zero_and_capacity(make: Make) -> None:
    policy = ready_policy(make, [1, 2], capacity=2)
    policy.touch([2])
    assert policy.evict(2, set()) == [1, 2]
    for _ in range(3):
        policy.touch([1])
    assert policy.target() == 2
    for _ in range(3):
        policy.touch([2])
    assert policy.target() == 0


def test_mark_calls_change_nothing_and_eligibility_follows_ref_cnt(make: Make) -> None:
    policy = ready_policy(make, [1, 2])
    before = policy.lists()
    policy.mark_non_evictable(1)
    policy.set_ref(1, 1)
    assert policy.lists() == before
    assert policy.evict(1, set()) == [2]


# -- the model itself ---------------------------------------------------------------------


def test_the_arc_profile_plugs_in_the_arc_refinement() -> None:
    profile = get_profile("arc")
    assert isinstance(profile.refinement, ARCRefinement)
    assert profile.includes == ("core", "arc")


def test_every_id_the_refinement_reports_is_an_arc_requirement() -> None:
    registry = load_registry()
    refinement = ARCRefinement()
    reported = {refinement.order_requirement, refinement.liveness_requirement}
    reported |= {refinement.culprit(op) for op in ARCRefinement._CULPRITS}
    reported.add(refinement.culprit("get"))
    for rid in reported:
        assert registry[rid].profile == "arc", rid


def test_culprits_name_the_operation_that_breaks_the_order() -> None:
    refinement = ARCRefinement()
    assert refinement.culprit("insert") == "ARC-INSERT-T1"
    assert refinement.culprit("touch") == "ARC-TOUCH-ORDER"
    assert refinement.culprit("remove") == "ARC-REMOVE-NO-GHOST"
    assert refinement.culprit("clear") == "ARC-CLEAR-RESET"


def test_transitions_leave_their_arguments_unchanged() -> None:
    before = ArcState([1, 2], [3], [4], [5], 1.5, 4)
    state = State({1: IDLE, 2: IN_FLIGHT, 3: IDLE}, [1, 3])
    snapshot = before.copy()
    arc.insert(before, 6)
    arc.remove(before, 1)
    arc.touch(before, state, [1, 2, 3, 4, 5])
    arc.evict(before, state, 2, ())
    arc.clear(before)
    assert before == snapshot


def test_a_none_eviction_returns_an_equal_state() -> None:
    before = ArcState([1], [2], [], [], 0, 2)
    state = State({1: IDLE, 2: 1}, [1])
    after, victims = arc.evict(before, state, 2, ())
    assert victims is None and after == before


def test_clear_resets_to_a_fresh_arc_of_the_same_capacity() -> None:
    busy = ArcState([1], [2], [3], [4], 2.5, 5)
    assert arc.clear(busy) == arc.start(5) == ArcState([], [], [], [], 0, 5)


def test_well_formed_rejects_overlap_oversized_ghosts_and_a_stray_target() -> None:
    assert arc_well_formed(ArcState([1], [2], [3], [4], 1, 2))
    assert not arc_well_formed(ArcState([1], [1], [], [], 0, 2))
    assert not arc_well_formed(ArcState([1], [], [1], [], 0, 2))
    assert not arc_well_formed(ArcState([], [], [1, 2, 3], [], 0, 2))
    assert not arc_well_formed(ArcState([], [], [], [], 2.5, 2))
    assert not arc_well_formed(ArcState([], [], [], [], -1, 2))
