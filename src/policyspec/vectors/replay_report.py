"""A replay of golden vectors as a ``Report``, for ``replay --html-report``.

A replay judges cases, not requirements: each case is one row (its
expectations, checked in order), and each failing case one failure. Cases
are written as the manager's calls; ``actions_of`` reads the caller actions
back out of them (every case is generated from actions, spec/vectors.md),
so that a failing case gets the same timeline and reproducing snippet as a
failure of ``check``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from policyspec.model.actions import Action
from policyspec.profiles import Profile
from policyspec.reports.report import FAIL, PASS, FailureReport, Report, RequirementStatus
from policyspec.reports.trace_record import encode_action
from policyspec.reports.verdict import decide
from policyspec.subject import Subject
from policyspec.vectors.runner import CaseResult
from policyspec.vectors.schema import read_vectors, vector_files
from policyspec.witness.render import describe, repro

__all__ = ["CaseAction", "actions_of", "replay_report"]


@dataclass(frozen=True)
class CaseAction:
    """A caller action and the calls of the case it spans (0-based, inclusive)."""

    action: Action
    first: int
    last: int
    victims: list[int] | None = None
    known: bool = False
    """Whether the case fixes ``victims`` (an evict whose expectation
    leaves no choice)."""


def _evict_victims(call: dict[str, Any]) -> tuple[list[int] | None, bool]:
    expect = call.get("expect", {})
    if "victims" in expect:
        want = expect["victims"]
        return (None if want is None else [int(k) for k, _ in want]), True
    allowed = [int(k) for k, _ in expect.get("any_of", [])]
    if expect.get("count") == len(allowed):
        return allowed, True
    return None, False


def actions_of(calls: Sequence[dict[str, Any]]) -> list[CaseAction]:
    """The caller actions whose expansion is ``calls``. Raises ValueError
    for calls no caller action makes (e.g. a lone ``mark_evictable``)."""
    refs: dict[int, int] = {}
    key_of: dict[int, int] = {}
    out: list[CaseAction] = []
    index = 0

    def follows(op: str, **fields: Any) -> bool:
        if index + 1 >= len(calls):
            return False
        after = calls[index + 1]
        return after["op"] == op and all(after.get(k) == v for k, v in fields.items())

    while index < len(calls):
        call = calls[index]
        op = call["op"]
        start = index
        if op == "insert":
            key, block = int(call["key"]), call["block"]
            refs[key], key_of[int(block["id"])] = int(block["ref_cnt"]), key
            action: Action = ("insert", key, int(block["ref_cnt"]))
        elif op == "set_ref":
            key, ref = key_of[int(call["id"])], int(call["ref_cnt"])
            old = refs[key]
            if old == -1 and ref == 0 and follows("mark_evictable", key=key):
                action, index = ("finish_store", key), index + 1
            elif ref == old + 1 and old > 0:
                action = ("start_read", key)
            elif ref == old - 1 and ref > 0:
                action = ("end_read", key)
            elif ref == 0 and old == 1 and follows("mark_evictable", key=key):
                action, index = ("end_read", key), index + 1
            else:
                raise ValueError(f"call {index + 1}: set_ref {old} -> {ref} is no caller action")
            refs[key] = ref
        elif op == "mark_non_evictable":
            key = int(call["key"])
            ident = next((i for i, k in key_of.items() if k == key), None)
            if not follows("set_ref", id=ident, ref_cnt=1):
                raise ValueError(f"call {index + 1}: mark_non_evictable without a load")
            action, index = ("start_read", key), index + 1
            refs[key] = 1
        elif op == "get":
            action = ("get", int(call["key"]))
        elif op == "touch":
            action = ("touch", tuple(int(k) for k in call["keys"]))
        elif op == "remove":
            action = ("remove", int(call["key"]))
            refs.pop(action[1], None)
        elif op == "clear":
            action = ("clear",)
            refs.clear()
        elif op == "evict":
            action = ("evict", int(call["n"]), frozenset(int(k) for k in call["protected"]))
            victims, known = _evict_victims(call)
            for key in victims or ():
                refs.pop(key, None)
            out.append(CaseAction(action, start, index, victims, known))
            index += 1
            continue
        else:
            raise ValueError(f"call {index + 1}: {op} alone is no caller action")
        out.append(CaseAction(action, start, index))
        index += 1
    return out


def _case_failure(subject: Subject, case: dict[str, Any], result: CaseResult) -> FailureReport:
    title = case.get("description", result.name)
    if result.exposes:
        title += f" (exposes {result.exposes})"
    base = dict(requirement=result.name, level=result.level or "MUST", title=title,
                message=f"call {result.step}: {result.message}", engine=f"replay of {result.file}")
    try:
        steps = actions_of(case["calls"])
    except (ValueError, KeyError):
        return FailureReport(**base, trace=[], repro="")
    upto = [s for s in steps if s.first < max(result.step, 1)]
    trace = [s.action for s in upto]
    records = []
    for number, step in enumerate(upto, 1):
        if number == len(upto) and step.action[0] == "evict":
            victims = None if result.victims is None else list(result.victims)
            records.append(encode_action(step.action, victims,
                                         observed=result.victims is not None))
        else:
            records.append(encode_action(step.action, step.victims, observed=step.known))
    return FailureReport(
        **base,
        trace=[describe(a, subject.has("mark")) for a in trace],
        repro=repro(subject.name, int(case["capacity"]), trace,
                    f"{result.name}: {result.message}", subject.has("mark")),
        actions=records,
    )


def replay_report(
    subject: Subject,
    profile: Profile,
    directory: Path,
    results: Sequence[CaseResult],
    *,
    strict: bool = False,
    seconds: float = 0.0,
) -> Report:
    """The report of a replay of ``directory``: one row per case run."""
    cases: dict[tuple[str, str], dict[str, Any]] = {}
    for path in vector_files(directory):
        for case in read_vectors(path)[1]:
            cases[(path.name, case["name"])] = case
    rows, failures = [], []
    for result in results:
        case = cases.get((result.file, result.name), {"calls": [], "capacity": 1})
        calls = case["calls"] if result.passed else case["calls"][: result.step]
        title = case.get("description", "")
        if result.exposes:
            title += f" (exposes {result.exposes})"
        rows.append(RequirementStatus(
            result.name, result.level or "MUST", result.profile, title,
            PASS if result.passed else FAIL, sum(1 for c in calls if "expect" in c), result.file,
        ))
        if not result.passed:
            failures.append(_case_failure(subject, case, result))
    verdict = decide(rows, failures, strict=strict)
    return Report(
        target=subject.name,
        profile=profile.name,
        verdict=verdict.name,
        verdict_reason=verdict.reason,
        requirements=rows,
        failures=failures,
        stats={"cases": len(results), "failed": len(failures), "seconds": round(seconds, 3),
               "rows": "case", "strict": strict, "directory": str(directory),
               "files": sorted({r.file for r in results})},
        api=subject.api,
        notes=list(subject.notes),
    )
