"""Each model transition, checked against its named postcondition predicates
and against the spec's prose restated independently (spec/*.md).

The contract strings themselves are evaluated in test_model_contracts.py;
here each behaviour gets its own test, named after it.
"""

from __future__ import annotations

import copy

from hypothesis import assume, given
from hypothesis import strategies as st
from strategies import (
    DEFAULT_KEY_SPACE,
    key_lists,
    keys,
    protected_sets,
    quiescent_states,
    states,
)

from policyspec.model import operations
from policyspec.model.preconditions import (
    can_end_read,
    can_finish_store,
    can_insert,
    can_mark_evictable,
    can_mark_non_evictable,
    can_start_read,
)
from policyspec.model.state import (
    IDLE,
    IN_FLIGHT,
    State,
    is_idle,
    is_quiescent,
    well_formed,
)

ALL_KEYS = range(DEFAULT_KEY_SPACE)


def legal(data: st.DataObject, candidates: list[int]) -> int:
    assume(candidates)
    return data.draw(st.sampled_from(candidates), label="key")


def with_ref(state: State, key: int, ref_cnt: int) -> State:
    """The manager's write of ``ref_cnt`` through the block (not a policy call)."""
    return State({**state.refs, key: ref_cnt}, list(state.idle), state.capacity)


def unique(items: list[int]) -> list[int]:
    """Items in order of first occurrence, without repeats."""
    return list(dict.fromkeys(items))


# get ---------------------------------------------------------------------


@given(states(), keys())
def test_get_reports_presence_and_changes_nothing(state: State, key: int) -> None:
    before = copy.deepcopy(state)
    assert operations.get(state, key) == (key in state.refs)
    assert state == before


# insert ------------------------------------------------------------------


@given(states(), st.sampled_from([IN_FLIGHT, IDLE]), st.data())
def test_insert_adds_only_the_key(state: State, ref_cnt: int, data: st.DataObject) -> None:
    key = legal(data, [k for k in ALL_KEYS if can_insert(state, k, ref_cnt)])
    after = operations.insert(state, key, ref_cnt)
    assert after.refs[key] == ref_cnt
    assert operations.same_except(state, after, key)
    assert well_formed(after)


@given(states(), st.data())
def test_insert_in_flight_is_not_eligible(state: State, data: st.DataObject) -> None:
    key = legal(data, [k for k in ALL_KEYS if can_insert(state, k, IN_FLIGHT)])
    after = operations.insert(state, key, IN_FLIGHT)
    assert not is_idle(after, key)
    assert after.idle == state.idle


@given(states(), st.data())
def test_insert_idle_becomes_most_recent(state: State, data: st.DataObject) -> None:
    key = legal(data, [k for k in ALL_KEYS if can_insert(state, k, IDLE)])
    after = operations.insert(state, key, IDLE)
    assert after.idle == [*state.idle, key]


@given(states(), keys())
def test_insert_refuses_present_keys_and_other_ref_counts(state: State, key: int) -> None:
    if key in state.refs:
        assert not can_insert(state, key, IN_FLIGHT)
        assert not can_insert(state, key, IDLE)
    assert not can_insert(state, key, 1)
    assert not can_insert(state, key, -2)


# remove ------------------------------------------------------------------


@given(states().filter(lambda s: bool(s.refs)), st.data())
def test_remove_drops_the_key_in_any_state(state: State, data: st.DataObject) -> None:
    key = data.draw(st.sampled_from(sorted(state.refs)), label="key")
    after = operations.remove(state, key)
    assert key not in after.refs
    assert not is_idle(after, key)
    assert operations.same_except(state, after, key)
    assert well_formed(after)


# touch -------------------------------------------------------------------


@given(states(), key_lists())
def test_touch_keeps_membership(state: State, touched: list[int]) -> None:
    after = operations.touch(state, touched)
    assert operations.keeps_membership(state, after)
    assert well_formed(after)


@given(states(), key_lists())
def test_touch_makes_the_first_idle_key_most_recent(state: State, touched: list[int]) -> None:
    after = operations.touch(state, touched)
    assert operations.first_idle_is_most_recent(state, touched, after)


@given(states(), key_lists())
def test_touch_moves_named_idle_keys_to_the_recent_end_head_last(
    state: State, touched: list[int]
) -> None:
    # LRU-TOUCH-ORDER, restated: untouched idle keys keep their order at the
    # old end; the touched idle keys follow, in reverse order of first
    # mention, so the head of the prefix is the most recent.
    named = unique([k for k in touched if is_idle(state, k)])
    expected = [k for k in state.idle if k not in named] + named[::-1]
    assert operations.touch(state, touched).idle == expected


@given(states(), key_lists())
def test_touch_ignores_keys_that_are_not_idle(state: State, touched: list[int]) -> None:
    only_idle = [k for k in touched if is_idle(state, k)]
    assert operations.touch(state, touched) == operations.touch(state, only_idle)


@given(states(), key_lists())
def test_touch_twice_is_touch_once(state: State, touched: list[int]) -> None:
    once = operations.touch(state, touched)
    assert operations.touch(once, touched) == once


@given(states())
def test_touch_of_nothing_changes_nothing(state: State) -> None:
    assert operations.touch(state, []) == state


def test_first_idle_is_most_recent_rejects_a_forward_walk() -> None:
    # The predicate can fail: walking the keys first-to-last leaves the
    # *last* key most recent, which LRU-TOUCH-ORDER forbids.
    before = State({1: IDLE, 2: IDLE, 3: IDLE}, [1, 2, 3])
    forward = State(dict(before.refs), [3, 1, 2])
    assert not operations.first_idle_is_most_recent(before, [1, 2], forward)
    assert operations.first_idle_is_most_recent(before, [1, 2], operations.touch(before, [1, 2]))


# mark_evictable / mark_non_evictable --------------------------------------


@given(states(), st.data())
def test_mark_evictable_appends_the_key_as_most_recent(state: State, data: st.DataObject) -> None:
    key = legal(data, [k for k in ALL_KEYS if can_mark_evictable(state, k)])
    after = operations.mark_evictable(state, key)
    assert after.idle == [*state.idle, key]
    assert after.refs == state.refs
    assert well_formed(after)


@given(states(), st.data())
def test_mark_non_evictable_takes_the_key_out_of_the_order(
    state: State, data: st.DataObject
) -> None:
    key = legal(data, [k for k in ALL_KEYS if can_mark_non_evictable(state, k)])
    after = operations.mark_non_evictable(state, key)
    assert not is_idle(after, key)
    assert after.idle == [k for k in state.idle if k != key]
    assert after.refs == state.refs
    assert well_formed(after)


@given(states(), st.data())
def test_mark_round_trip_loses_the_place(state: State, data: st.DataObject) -> None:
    # Pin then unpin: the key comes back as the most recent, not where it was.
    key = legal(data, [k for k in ALL_KEYS if can_mark_non_evictable(state, k)])
    back = operations.mark_evictable(operations.mark_non_evictable(state, key), key)
    assert back.idle == [k for k in state.idle if k != key] + [key]


@given(states(), keys())
def test_mark_preconditions_are_exclusive(state: State, key: int) -> None:
    assert not (can_mark_evictable(state, key) and can_mark_non_evictable(state, key))


# clear -------------------------------------------------------------------


@given(states())
def test_clear_gives_the_fresh_state(state: State) -> None:
    assert operations.clear(state) == State(capacity=state.capacity)


# quiescence: the manager's compound steps -----------------------------------


@given(quiescent_states(), st.data())
def test_manager_steps_keep_a_quiescent_state_quiescent(state: State, data: st.DataObject) -> None:
    # Between two manager steps every 0-transition has been reported, so the
    # idle list holds exactly the keys at ref_cnt 0 (spec/sources.md C3/C4).
    assert is_quiescent(state)
    step = data.draw(
        st.sampled_from(
            ["insert", "finish_store", "start_read", "end_read", "remove", "touch", "evict"]
        ),
        label="step",
    )
    after: State
    if step == "insert":
        key = legal(data, [k for k in ALL_KEYS if can_insert(state, k, IN_FLIGHT)])
        after = operations.insert(state, key, IN_FLIGHT)
    elif step == "finish_store":
        key = legal(data, [k for k in ALL_KEYS if can_finish_store(state, k)])
        after = operations.mark_evictable(with_ref(state, key, IDLE), key)
    elif step == "start_read":
        key = legal(data, [k for k in ALL_KEYS if can_start_read(state, k)])
        pinned = operations.mark_non_evictable(state, key) if is_idle(state, key) else state
        after = with_ref(pinned, key, state.refs[key] + 1)
    elif step == "end_read":
        key = legal(data, [k for k in ALL_KEYS if can_end_read(state, k)])
        after = with_ref(state, key, state.refs[key] - 1)
        if after.refs[key] == IDLE:
            after = operations.mark_evictable(after, key)
    elif step == "remove":
        key = legal(data, [k for k in ALL_KEYS if k in state.refs])
        after = operations.remove(state, key)
    elif step == "touch":
        after = operations.touch(state, data.draw(key_lists(), label="keys"))
    else:
        n = data.draw(st.integers(min_value=0, max_value=4), label="n")
        after, _ = operations.evict(state, n, data.draw(protected_sets(), label="protected"))
    assert well_formed(after)
    assert is_quiescent(after), f"{step} left {after}"
