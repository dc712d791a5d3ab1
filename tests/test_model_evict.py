"""What evict may return (spec/evict.md): the core judge ``evict_violation``
and the lru refinement ``lru_victims``, and that the second refines the first.
"""

from __future__ import annotations

import copy

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from strategies import protected_sets, states

from policyspec.model import operations
from policyspec.model.evict import commit_evict, eligible, evict_violation, lru_victims
from policyspec.model.state import IDLE, IN_FLIGHT, State, well_formed
from policyspec.registry import load_registry

counts = st.integers(min_value=0, max_value=6)


# the lru choice refines core ------------------------------------------------


@given(states(), counts, protected_sets())
def test_lru_victims_are_an_outcome_core_allows(
    state: State, n: int, protected: frozenset[int]
) -> None:
    assert evict_violation(state, n, protected, lru_victims(state, n, protected)) is None


@given(states(), counts, protected_sets())
def test_lru_returns_none_only_when_fewer_than_n_are_eligible(
    state: State, n: int, protected: frozenset[int]
) -> None:
    victims = lru_victims(state, n, protected)
    assert (victims is None) == (len(eligible(state, protected)) < n)


@given(states(), counts, protected_sets())
def test_lru_takes_the_least_recent_eligible_keys_in_order(
    state: State, n: int, protected: frozenset[int]
) -> None:
    victims = lru_victims(state, n, protected)
    assume(victims is not None)
    assert victims == eligible(state, protected)[:n]


@given(states(), counts, protected_sets())
def test_model_evict_gives_the_lru_choice_which_core_allows(
    state: State, n: int, protected: frozenset[int]
) -> None:
    _, victims = operations.evict(state, n, protected)
    assert victims == lru_victims(state, n, protected)
    assert evict_violation(state, n, protected, victims) is None


@given(states(), protected_sets())
def test_evict_zero_returns_the_empty_list(state: State, protected: frozenset[int]) -> None:
    assert operations.evict(state, 0, protected) == (state, [])


@given(states(), counts, protected_sets())
def test_evict_commits_the_victims_or_changes_nothing(
    state: State, n: int, protected: frozenset[int]
) -> None:
    before = copy.deepcopy((state, protected))
    after, victims = operations.evict(state, n, protected)
    assert (state, protected) == before, "evict mutated its arguments"
    assert well_formed(after)
    if victims is None:
        assert after == state
    else:
        assert after == commit_evict(state, victims)
        assert not set(victims) & set(after.refs)
        assert len(after.refs) == len(state.refs) - n


@given(states(), counts, protected_sets())
def test_protected_absent_keys_change_nothing(
    state: State, n: int, protected: frozenset[int]
) -> None:
    present_only = frozenset(k for k in protected if k in state.refs)
    assert operations.evict(state, n, protected) == operations.evict(state, n, present_only)


# eligibility ----------------------------------------------------------------


@given(states(), protected_sets())
def test_eligible_keys_are_idle_unprotected_and_ready(
    state: State, protected: frozenset[int]
) -> None:
    allowed = eligible(state, protected)
    assert allowed == [k for k in state.idle if k not in protected]
    assert all(state.refs[k] == IDLE for k in allowed)


# the core judge: freedom of choice ------------------------------------------


@given(states(), protected_sets(), st.data())
def test_core_allows_any_n_eligible_keys_in_any_order(
    state: State, protected: frozenset[int], data: st.DataObject
) -> None:
    allowed = eligible(state, protected)
    chosen = data.draw(st.permutations(allowed), label="order")
    n = data.draw(st.integers(min_value=0, max_value=len(allowed)), label="n")
    assert evict_violation(state, n, protected, chosen[:n]) is None


@given(states(), counts, protected_sets())
def test_core_allows_none_exactly_when_fewer_than_n_are_eligible_or_as_should(
    state: State, n: int, protected: frozenset[int]
) -> None:
    assume(n > 0)
    verdict = evict_violation(state, n, protected, None)
    if len(eligible(state, protected)) < n:
        assert verdict is None
    else:
        assert verdict == "EVICT-LIVENESS"


# the core judge: each broken rule is named -----------------------------------

READY = State({1: IDLE, 2: IDLE, 3: IDLE, 4: IN_FLIGHT, 5: 2, 6: IDLE}, [1, 2, 3])
"""1, 2, 3 idle (least recent first); 4 in flight; 5 being read; 6 at
ref_cnt 0 but not yet marked evictable."""


@pytest.mark.parametrize(
    ("n", "protected", "victims", "requirement"),
    [
        (0, set(), None, "EVICT-ZERO"),
        (0, set(), [1], "EVICT-ZERO"),
        (2, set(), [1], "EVICT-EXACT-N"),
        (2, set(), [1, 1], "EVICT-EXACT-N"),
        (1, set(), [1, 2], "EVICT-EXACT-N"),
        (1, {1}, [1], "EVICT-UNPROTECTED"),
        (1, set(), [4], "EVICT-IDLE-ONLY"),
        (1, set(), [5], "EVICT-IDLE-ONLY"),
        (1, set(), [6], "EVICT-IDLE-ONLY"),
        (1, set(), [9], "EVICT-IDLE-ONLY"),
        (3, set(), None, "EVICT-LIVENESS"),
        (2, {1, 99}, None, "EVICT-LIVENESS"),
        (3, {1}, None, None),
        (4, set(), None, None),
        (2, {1, 99}, [3, 2], None),
    ],
)
def test_evict_violation_names_the_broken_requirement(
    n: int, protected: set[int], victims: list[int] | None, requirement: str | None
) -> None:
    assert evict_violation(READY, n, protected, victims) == requirement


def test_evict_violation_reports_only_registered_requirements() -> None:
    registry = load_registry()
    for requirement in (
        "EVICT-ZERO",
        "EVICT-EXACT-N",
        "EVICT-UNPROTECTED",
        "EVICT-IDLE-ONLY",
        "EVICT-LIVENESS",
    ):
        assert requirement in registry, requirement
    assert registry["EVICT-LIVENESS"].level == "SHOULD"


# the helpers are pure ----------------------------------------------------------


@given(states(), counts, protected_sets())
def test_evict_helpers_do_not_mutate_their_arguments(
    state: State, n: int, protected: frozenset[int]
) -> None:
    before = copy.deepcopy(state)
    victims = lru_victims(state, n, protected)
    eligible(state, protected)
    evict_violation(state, n, protected, victims)
    if victims is not None:
        commit_evict(state, victims)
    assert state == before
