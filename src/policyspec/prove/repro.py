"""Counterexamples as pytest tests a policy author can keep.

A refinement counterexample is a pre-state and one call. ``reaching_trace``
turns it into caller actions from a fresh policy (the manager's own calls:
insert in flight, finish the store, start reads), then the call, then an
eviction of every eligible key so that a wrong order or eligibility shows
in what comes back. The test replays that trace in the Lockstep harness,
which raises the broken requirement. When the trace does not reproduce the
fault (it only shows from a state the pair builds directly), the test
checks the single step through the abstraction pair instead, and says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from policyspec.model.actions import Action
from policyspec.model.evict import eligible
from policyspec.model.state import IDLE, IN_FLIGHT, State

__all__ = [
    "direct_test",
    "model_test",
    "op_action",
    "portable_target",
    "reaching_trace",
    "trace_test",
]


def portable_target(target: str) -> str:
    """The target as the test should name it: file paths made absolute, so
    the test runs from any directory."""
    location, sep, attr = target.rpartition(":")
    if sep and (location.endswith(".py") or "/" in location):
        return f"{Path(location).resolve()}:{attr}"
    return target


def setup_actions(state: State, pending: int | None = None) -> list[Action]:
    """Caller actions that bring a fresh policy to ``state`` (quiescent;
    ``pending`` is a key at ref_cnt 0 not yet marked, reached here as a
    read of one that has not ended yet)."""
    actions: list[Action] = [("insert", key, IN_FLIGHT) for key in state.refs]
    read = [k for k, ref in state.refs.items() if ref > IDLE or k == pending]
    for key in read:
        actions.append(("finish_store", key))
        ref = 1 if key == pending else state.refs[key]
        actions.extend(("start_read", key) for _ in range(ref))
    actions.extend(("finish_store", key) for key in state.idle)
    return actions


def op_action(op: str, args: Sequence[Any]) -> Action:
    """The caller action whose expansion makes the call ``op(*args)``."""
    if op == "mark_evictable":
        return ("end_read", args[0])
    if op == "mark_non_evictable":
        return ("start_read", args[0])
    if op == "touch":
        return ("touch", tuple(args[0]))
    if op == "evict":
        return ("evict", args[0], frozenset(args[1]))
    return (op, *args)


def reaching_trace(
    state: State, op: str, args: Sequence[Any], after: State | None
) -> list[Action]:
    """Setup, the call, and two probes: evict every key eligible in
    ``after`` (the model's state after the call, when known; shows the
    order and which keys are eligible), then evict one more, which must
    fail (shows keys the policy wrongly holds as eligible)."""
    pending = args[0] if op == "mark_evictable" else None
    trace = [*setup_actions(state, pending), op_action(op, args)]
    if after is not None:
        if eligible(after, ()):
            trace.append(("evict", len(eligible(after, ())), frozenset()))
        trace.append(("evict", 1, frozenset()))
    return trace


def _name(*parts: str) -> str:
    return "test_" + "_".join(re.sub(r"[^0-9a-z]+", "_", p.lower()).strip("_") for p in parts)


def _show_trace(trace: Sequence[Action]) -> str:
    return "\n".join(f"    {action!r}," for action in trace)


_REACHING = """The trace reaches that state from a fresh policy through the calls vLLM's
manager makes, makes the call, evicts every eligible key (so that order and
eligibility show), then asks for one more eviction, which must fail. The
harness raises the requirement broken."""
_MINIMISED = """The trace is the minimal one from a fresh policy that still shows it (as
check minimises a finding); the harness raises the requirement broken."""


def trace_test(
    target: str, profile: str, capacity: int, trace: Sequence[Action], requirement: str,
    story: str, strict: bool = False, *, minimised: bool = False,
) -> str:
    """A pytest module replaying ``trace`` in the harness; ``strict``: every
    failure raises, SHOULD ones too (needed when the harness can only see
    the fault through a SHOULD, such as EVICT-LIVENESS under core).
    ``minimised``: the trace is check's minimal witness rather than the
    reaching trace with its probes (``reaching_trace``)."""
    build = "Lockstep(load_subject(TARGET), get_profile(PROFILE), CAPACITY)"
    why = "\n"
    if strict:
        build = ("Lockstep(\n        load_subject(TARGET), get_profile(PROFILE), CAPACITY, "
                 "fatal=lambda requirement: True\n    )")
        why = "\nEvery failure is fatal here, SHOULD ones too.\n"
    told = _MINIMISED if minimised else _REACHING
    return f'''"""`policyspec prove` found {requirement} (profile {profile}).

{story}
Policy: {portable_target(target)}
{told}{why}"""

from policyspec import Lockstep, get_profile, load_subject

TARGET = {portable_target(target)!r}
PROFILE = {profile!r}
CAPACITY = {capacity}
TRACE = [
{_show_trace(trace)}
]


def {_name("prove", requirement)}() -> None:
    harness = {build}
    for action in TRACE:
        harness.apply(action)
'''


def direct_test(
    target: str, profile: str, state: State, op: str, args: Sequence[Any], requirement: str,
    story: str, abstraction: str | None = None, strict: bool = False,
) -> str:
    """A pytest module checking the one step through the abstraction pair."""
    return f'''"""`policyspec prove` found {requirement} (profile {profile}).

{story}
Policy: {portable_target(target)}
No call sequence from a fresh policy reproduced it, so this test builds the
pre-state through the policy's abstraction pair, as prove did.
"""

from policyspec.model.state import State
from policyspec.prove.commute import check_step
from policyspec.prove.proof_target import TargetSpec, load_proof_subject

TARGET = {portable_target(target)!r}
SPEC = TargetSpec(TARGET, {profile!r}, {abstraction!r}, strict={strict!r})


def {_name("prove", requirement)}() -> None:
    state = {state!r}
    divergence = check_step(load_proof_subject(SPEC), {op!r}, state, {tuple(args)!r})
    assert divergence is None, divergence.requirement
'''


def model_test(module: str, function: str, bindings: dict[str, Any], condition: str) -> str:
    """A pytest module evaluating a model postcondition on the arguments
    CrossHair found, in the module's globals as CrossHair does."""
    shown = ", ".join(f"{k}={v!r}" for k, v in bindings.items())
    imports = "from policyspec.model.state import State  # noqa: F401\n"
    if "ArcState(" in shown:
        imports += "from policyspec.model.arc import ArcState  # noqa: F401\n"
    return f'''"""Found by `policyspec prove --model`: {module}.{function} breaks
``post: {condition}`` when called with {shown}.
"""

import {module} as spec_module
{imports}

def {_name("model", function)}() -> None:
    bindings = {{{", ".join(f"{k!r}: {v!r}" for k, v in bindings.items())}}}
    result = spec_module.{function}(**bindings)
    namespace = {{**vars(spec_module), **bindings, "__return__": result}}
    assert eval({condition!r}, namespace)
'''
