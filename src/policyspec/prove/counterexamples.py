"""From a CrossHair counterexample line to a finding a person can act on.

Every counterexample is replayed concretely, outside CrossHair, before it is
reported: the replay confirms it (CrossHair can mis-analyse a path), gives
the full story (state, call, what came back, what the spec requires), and
yields the pytest test that reproduces it (policyspec.prove.repro). Through
the derived pair the replay is a trace of caller actions from a fresh
policy, which goes through check's minimiser and blame like any finding of
an engine (``policyspec.session.report_findings``) before it is shown.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from policyspec.model.state import State
from policyspec.prove.calls import parse_call
from policyspec.prove.canonical import decode, past_of
from policyspec.prove.commute import Divergence, ProofSubject, check_step
from policyspec.prove.derived import derived_failure
from policyspec.prove.proof_target import TargetSpec
from policyspec.prove.repro import direct_test, model_test, reaching_trace, trace_test
from policyspec.registry import load_registry
from policyspec.reports.report import FailureReport
from policyspec.reports.trace_record import decode_action
from policyspec.run.result import EngineRun
from policyspec.run.result import Finding as EngineFinding
from policyspec.session import report_findings
from policyspec.witness.reproduce import failure_of
from policyspec.witness.steps import numbered

__all__ = ["MINIMISE_UNITS", "Finding", "derived_finding", "model_finding",
           "refinement_finding"]

MINIMISE_UNITS = 5.0
"""The check budget, in work units, whose count of replays minimises one
counterexample (``policyspec.session.report_findings``)."""


@dataclass
class Finding:
    """A confirmed (or, if ``reproduced`` is False, unconfirmed) fault."""

    obligation: str
    requirement: str
    lines: list[str]
    """The story: pre-state, call, what came back, what the spec requires."""
    test: str
    """A pytest module that reproduces it ("" when it did not reproduce)."""
    reproduced: bool
    how: str = ""
    """How the test reproduces it: a call sequence, the pair, the model."""
    level: str = "MUST"
    """The broken requirement's level: a SHOULD counts only with --strict."""
    report: FailureReport | None = None
    """As ``check`` reports it (minimised trace, snippet, trace as data),
    for the JSON, JUnit and HTML reports; None for the model's and a
    hand-written pair's findings, which have no minimised trace."""


def _show_state(state: State) -> str:
    return f"refs={state.refs} idle={state.idle} capacity={state.capacity}"


def _show_call(op: str, args: Sequence[Any]) -> str:
    shown = [sorted(a) if isinstance(a, frozenset) else list(a) if isinstance(a, tuple) else a
             for a in args]
    return f"{op}({', '.join(repr(a) for a in shown)})"


def _story(d: Divergence) -> list[str]:
    lines = [f"state:     {_show_state(d.before)}", f"operation: {_show_call(d.op, d.args)}"]
    if d.op in ("get", "evict") or d.requirement == "API-NO-RAISE":
        got = d.got_result
        if d.op == "evict" and isinstance(got, list):
            got = [item[0] if isinstance(item, tuple) else item for item in got]
        lines.append(f"returned:  {got!r}")
        if d.expected_result is not None or d.op == "evict":
            want = d.expected_result
            if d.op == "get" and want is not None:
                want = f"the block inserted under key {d.args[0]}"
            lines.append(f"expected:  {want}")
    if d.got is not None and d.expected is not None:
        lines.append(f"after:     {_show_state(d.got)}")
        lines.append(f"spec:      {_show_state(d.expected)}")
    if d.note:
        lines.append(f"note:      {d.note}")
    return lines


def refinement_finding(
    subject: ProofSubject, spec: TargetSpec, op: str, message: str
) -> Finding:
    """Replay ``op``'s counterexample and turn it into a finding."""
    _, call_args, _ = parse_call(message, {})
    state, model_args = decode(op, call_args)
    divergence = check_step(subject, op, state, model_args)
    if divergence is None:
        return Finding(op, "?", [f"CrossHair reported: {message}",
                                 "replayed concretely, the step commutes: not counted"],
                       "", False)
    story = f"CrossHair: {_show_call(op, model_args)} from {_show_state(state)}."
    capacity = state.capacity if state.capacity is not None else len(state.refs) + 1
    trace = reaching_trace(state, op, model_args, divergence.expected)
    failure = failure_of(subject.subject, subject.profile, capacity, trace,
                         fatal=(lambda rid: True) if spec.strict else None)
    if failure is not None:
        soft = load_registry()[failure.requirement].level != "MUST"
        test = trace_test(spec.target, spec.profile, capacity, trace, divergence.requirement,
                          story, spec.strict or soft)
        how = f"a call sequence from a fresh policy ({failure.requirement} in the harness"
        how += ", a SHOULD there: the test makes every failure fatal)" if soft else ")"
    else:
        test = direct_test(spec.target, spec.profile, state, op, model_args,
                           divergence.requirement, story, spec.abstraction, spec.strict)
        how = "the abstraction pair (no call sequence from a fresh policy showed it)"
    return Finding(op, divergence.requirement, _story(divergence), test, True, how)


def derived_finding(
    subject: ProofSubject, spec: TargetSpec, op: str, message: str
) -> Finding:
    """Replay ``op``'s counterexample through the derived pair, minimise its
    trace as ``check`` does, and turn it into a finding."""
    _, call_args, _ = parse_call(message, {})
    state, model_args = decode(op, call_args)
    past = past_of(op, call_args)
    story = f"CrossHair: {_show_call(op, model_args)} from {_show_state(state)}"
    if past:
        story += f", key {len(state.refs)} stored and evicted before"
    failure = derived_failure(subject, op, state, model_args, past)
    if failure is None:
        return Finding(op, "?", [f"CrossHair reported: {message}",
                                 "replayed concretely, nothing fails: not counted"], "", False)
    capacity = state.capacity if state.capacity is not None else len(state.refs) + 1
    found = EngineFinding(failure.requirement, failure.message, failure.trace, "prove",
                          capacity=capacity)
    report = report_findings(subject.subject, subject.profile, EngineRun("prove", [found]),
                             capacity=capacity, units=MINIMISE_UNITS, strict=spec.strict)
    shown = report.failures[0]
    shown.engine = f"prove ({op})"
    trace = [decode_action(record) for record in shown.actions] or list(failure.trace)
    soft = shown.level != "MUST"
    test = trace_test(spec.target, spec.profile, capacity, trace, shown.requirement,
                      f"{story}.", spec.strict or soft, minimised=True)
    lines = [story, shown.message, f"minimal trace ({len(shown.trace)} steps, capacity "
             f"{capacity}, minimised as check minimises):",
             *(f"  {line}" for line in numbered(shown.trace))]
    how = "the minimal call sequence from a fresh policy, in the harness"
    if soft:
        how += f" ({shown.requirement} is a {shown.level}: the test makes every failure fatal)"
    return Finding(op, shown.requirement, lines, test, True, how, shown.level, shown)


def model_finding(qualname: str, condition: str, message: str) -> Finding:
    """Replay a counterexample to a model contract."""
    from policyspec.model.state import State as ModelState

    constructors: dict[str, Any] = {"State": ModelState}
    try:
        from policyspec.model.arc import ArcState

        constructors["ArcState"] = ArcState
    except ImportError:  # pragma: no cover - arc is part of the model now
        pass
    module_name, _, function_name = qualname.rpartition(".")
    lines = [f"CrossHair: {message}"]
    try:
        _, args, kwargs = parse_call(message, constructors)
        module = importlib.import_module(module_name)
        function = getattr(module, function_name)
        bindings = dict(inspect.signature(function).bind(*args, **kwargs).arguments)
    except (ValueError, TypeError, AttributeError, SyntaxError, ImportError) as exc:
        return Finding(qualname, condition, [*lines, f"could not replay: {exc}"], "", False)
    try:
        result = function(**bindings)
        holds = bool(eval(condition, {**vars(module), **bindings, "__return__": result}))
    except Exception as exc:  # the transition itself raised: reproduced
        lines.append(f"replayed: raised {type(exc).__name__}: {exc}")
        holds = False
    if holds:
        return Finding(qualname, condition,
                       [*lines, "replayed concretely, the condition holds: not counted"], "", False)
    test = model_test(module_name, function_name, bindings, condition)
    return Finding(qualname, condition, lines, test, True, "the model function itself")
