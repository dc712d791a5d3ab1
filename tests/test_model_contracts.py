"""The model's PEP 316 contracts, evaluated under Hypothesis.

CrossHair reads the ``pre:``/``post:`` lines of policyspec.model.operations
symbolically; here the very same strings are evaluated (in the operations
module's globals, as CrossHair does) on random well-formed states whose
arguments the precondition predicates declare legal. Each transition must
also keep ``well_formed`` and leave its arguments untouched.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import DEFAULT_KEY_SPACE, key_lists, keys, protected_sets, states

from policyspec.model import operations
from policyspec.model.preconditions import (
    can_insert,
    can_mark_evictable,
    can_mark_non_evictable,
    can_remove,
)
from policyspec.model.state import IDLE, IN_FLIGHT, State, well_formed

ArgDrawer = Callable[[st.DataObject, State], tuple[Any, ...]]


def _legal_key(data: st.DataObject, state: State, legal: Callable[[int], bool]) -> int:
    """A key the precondition predicate ``legal`` accepts (the example is
    discarded when there is none)."""
    candidates = [key for key in range(DEFAULT_KEY_SPACE) if legal(key)]
    assume(bool(candidates))
    return data.draw(st.sampled_from(candidates), label="key")


def _insert_args(data: st.DataObject, state: State) -> tuple[Any, ...]:
    ref_cnt = data.draw(st.sampled_from([IN_FLIGHT, IDLE]), label="ref_cnt")
    return (_legal_key(data, state, lambda k: can_insert(state, k, ref_cnt)), ref_cnt)


ARGUMENTS: dict[str, ArgDrawer] = {
    "get": lambda data, state: (data.draw(keys(), label="key"),),
    "insert": _insert_args,
    "remove": lambda data, state: (_legal_key(data, state, lambda k: can_remove(state, k)),),
    "touch": lambda data, state: (data.draw(key_lists(), label="keys"),),
    "mark_evictable": lambda data, state: (
        _legal_key(data, state, lambda k: can_mark_evictable(state, k)),
    ),
    "mark_non_evictable": lambda data, state: (
        _legal_key(data, state, lambda k: can_mark_non_evictable(state, k)),
    ),
    "evict": lambda data, state: (
        data.draw(st.integers(min_value=0, max_value=5), label="n"),
        data.draw(protected_sets(), label="protected"),
    ),
    "clear": lambda data, state: (),
}
"""How to draw legal arguments for each transition, beside its state."""

STATES: dict[str, st.SearchStrategy[State]] = {
    "mark_evictable": states().filter(
        lambda s: any(can_mark_evictable(s, k) for k in range(DEFAULT_KEY_SPACE))
    ),
    "mark_non_evictable": states().filter(
        lambda s: any(can_mark_non_evictable(s, k) for k in range(DEFAULT_KEY_SPACE))
    ),
    "remove": states().filter(lambda s: bool(s.refs)),
    "insert": states().filter(lambda s: s.capacity is None or len(s.refs) < s.capacity),
}
"""States for transitions that need a particular key to exist (the rest
draw from ``states()``); filtering here keeps ``assume`` rare."""


def conditions(function: Callable[..., Any], kind: str) -> list[str]:
    """The ``kind:`` lines ("pre" or "post") of a PEP 316 docstring."""
    doc = inspect.getdoc(function) or ""
    prefix = f"{kind}:"
    return [
        line.strip()[len(prefix) :].strip()
        for line in doc.splitlines()
        if line.strip().startswith(prefix)
    ]


def evaluate(condition: str, bindings: dict[str, Any]) -> bool:
    """A contract line evaluated the way CrossHair does: in the module's
    globals, with the parameters (and ``__return__``) added. One namespace,
    so that comprehensions in a condition see the parameters."""
    return bool(eval(condition, {**vars(operations), **bindings}))


def test_every_contracted_operation_has_an_argument_drawer() -> None:
    contracted = {
        name for name in operations.__all__ if conditions(getattr(operations, name), "post")
    }
    assert contracted == set(ARGUMENTS)


@pytest.mark.parametrize("name", sorted(ARGUMENTS))
def test_every_operation_states_a_precondition_and_postconditions(name: str) -> None:
    function = getattr(operations, name)
    assert conditions(function, "pre"), f"{name} has no pre: line"
    assert conditions(function, "post"), f"{name} has no post: line"


@pytest.mark.parametrize("name", sorted(ARGUMENTS))
@settings(suppress_health_check=[HealthCheck.too_slow])  # filtered states; slow on a busy box
@given(data=st.data())
def test_transition_meets_its_docstring_postconditions(name: str, data: st.DataObject) -> None:
    function = getattr(operations, name)
    state = data.draw(STATES.get(name, states()), label="state")
    args = ARGUMENTS[name](data, state)
    bindings = dict(inspect.signature(function).bind(state, *args).arguments)
    for condition in conditions(function, "pre"):
        assert evaluate(condition, bindings), f"drawn arguments break pre: {condition}"
    before = copy.deepcopy((state, args))
    result = function(state, *args)
    assert (state, args) == before, f"{name} mutated its arguments"
    bindings["__return__"] = result
    for condition in conditions(function, "post"):
        assert evaluate(condition, bindings), f"{name}{args} breaks post: {condition}"
    after = result[0] if isinstance(result, tuple) else result
    if isinstance(after, State):
        assert well_formed(after), f"{name}{args} gave an ill-formed state {after}"
        assert after is not state, f"{name} returned its argument instead of a new state"


def test_a_broken_postcondition_is_reported_false() -> None:
    # The evaluator must be able to fail: a deliberately wrong condition on
    # a real transition evaluates to False.
    state = State({1: IDLE}, [1])
    bindings = {"state": state, "key": 1, "__return__": operations.remove(state, 1)}
    assert not evaluate("key in __return__.refs", bindings)
    assert evaluate("key not in __return__.refs", bindings)
