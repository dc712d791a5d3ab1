"""The state strategies (policyspec.strategies) produce what they promise and
reach the corners the model tests rely on."""

from __future__ import annotations

import pytest
from hypothesis import Phase, find, given, settings
from strategies import keys, quiescent_states, states

from policyspec.model.state import IDLE, IN_FLIGHT, State, is_quiescent, well_formed


@given(states())
def test_states_are_well_formed(state: State) -> None:
    assert well_formed(state)


@given(quiescent_states())
def test_quiescent_states_are_well_formed_and_quiescent(state: State) -> None:
    assert well_formed(state)
    assert is_quiescent(state)


@given(states(max_keys=3, key_space=5, max_ref=1))
def test_states_respect_their_bounds(state: State) -> None:
    assert len(state.refs) <= 3
    assert state.capacity is None or len(state.refs) <= state.capacity <= 3
    assert all(0 <= key < 5 for key in state.refs)
    assert all(IN_FLIGHT <= ref <= 1 for ref in state.refs.values())


@given(keys(4))
def test_keys_stay_in_the_key_space(key: int) -> None:
    assert 0 <= key < 4


NO_SHRINK = settings(phases=[Phase.generate], max_examples=500, database=None)
"""Reachability only: the first example found will do, no need to shrink."""


def test_states_reach_a_ready_key_that_is_not_idle_yet() -> None:
    # The moment between the manager's write of 0 and its mark_evictable.
    found = find(states(), lambda s: not is_quiescent(s), settings=NO_SHRINK)
    assert any(ref == IDLE and key not in found.idle for key, ref in found.refs.items())


def test_states_reach_every_kind_of_key_at_once() -> None:
    def mixed(state: State) -> bool:
        refs = set(state.refs.values())
        return len(state.idle) >= 2 and IN_FLIGHT in refs and any(r > 0 for r in refs)

    assert mixed(find(states(), mixed, settings=NO_SHRINK))


def test_states_reach_a_full_cache() -> None:
    def full(state: State) -> bool:
        return bool(state.refs) and state.capacity == len(state.refs)

    assert full(find(states(), full, settings=NO_SHRINK))


def test_impossible_bounds_are_refused() -> None:
    with pytest.raises(ValueError, match="max_keys"):
        states(max_keys=5, key_space=3)
    with pytest.raises(ValueError, match="max_keys"):
        quiescent_states(max_keys=-1)
