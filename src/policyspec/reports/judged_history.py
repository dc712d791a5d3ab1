"""A judged history (``history.judge.Verdict``) as a report of the same
family as ``policyspec check``'s, so that one CI gate reads both (spec/history.md).
Each profile's first failure is a failure whose trace is its window, and a
breach of the caller contract is a failure too, under its predicate's name:
the manager, not the policy, broke the contract.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from policyspec.profiles import get_profile
from policyspec.registry import load_registry, requirements_for
from policyspec.reports.report import (
    FAIL,
    NOT_TESTED,
    PASS,
    FailureReport,
    Report,
    RequirementStatus,
)
from policyspec.reports.verdict import FAIL as FAILS
from policyspec.reports.verdict import Verdict, decide

__all__ = ["history_report", "window_actions"]


def history_report(verdict: Any, paths: Sequence[str], cases: Mapping[str, Any]) -> Report:
    """The report of a judged history ``verdict`` of ``paths`` whose windows
    are ``cases`` (by profile)."""
    registry = load_registry()
    header = verdict.header
    statuses: list[RequirementStatus] = []
    failing: dict[str, Any] = {}
    for p in verdict.profiles:
        if p.first is not None:
            failing.setdefault(p.first.requirement, (p, p.first))
    seen: set[str] = set()
    for p in verdict.profiles:
        try:
            includes = get_profile(p.profile).includes
        except ValueError:
            continue
        for req in requirements_for(includes):
            if req.id in seen:
                continue
            seen.add(req.id)
            checks = int(verdict.exercised.get(req.id, 0))
            if req.id in failing:
                status, reason = FAIL, ""
            elif checks:
                status, reason = PASS, ""
            elif not p.judged:
                status, reason = NOT_TESTED, p.note or "the history does not let it be judged"
            else:
                status, reason = NOT_TESTED, "the history never exercised it"
            statuses.append(RequirementStatus(req.id, req.level, req.profile, req.title,
                                              status, checks, reason, applies=False))
    failures = []
    for requirement, (p, v) in failing.items():
        known = registry.get(requirement)
        case = cases.get(p.profile)
        calls = list(case["calls"]) if case else []
        failures.append(FailureReport(
            requirement=requirement,
            level=known.level if known else "MUST",
            title=known.title if known else requirement,
            message=f"{v.message} (call {v.call:,} of the history, profile {p.profile}"
                    + (f"; likely {v.culprit}" if v.culprit else "") + ")",
            trace=[_described(c) for c in calls],
            repro=_replay_hint(case),
            engine="history",
            actions=window_actions(calls),
        ))
    if verdict.caller is not None:
        c = verdict.caller
        failures.append(FailureReport(
            requirement=c.requirement, level="MUST", title="the caller contract",
            message=f"the manager broke the caller contract at call {c.call:,}: {c.message}",
            trace=[], repro="", engine="history"))
    gate = verdict.profiles[0] if verdict.profiles else None
    # The gate is the first profile judged (core unless --profile names
    # one) and the caller contract (``Verdict.passed``); the other profiles
    # say which exact models the history rules out.
    gated = [f for f in failures if f.engine == "history" and (
        (gate is not None and gate.first is not None and f.requirement == gate.first.requirement)
        or (verdict.caller is not None and f.requirement == verdict.caller.requirement))]
    open_gate = gate is not None and not gate.judged and gate.first is None
    decided = decide(statuses, gated, strict=False,
                     unjudged=[f"{gate.profile}: {gate.note}"] if gate and open_gate else [])
    others = [p.profile for p in verdict.profiles[1:] if p.first is not None]
    if others and decided.name != FAILS:
        decided = Verdict(decided.name, "; ".join(filter(None, (
            decided.reason, f"the history rules out {', '.join(others)}"))))
    return Report(
        target=str(header.get("target", "?")),
        profile="+".join(p.profile for p in verdict.profiles),
        verdict=decided.name,
        verdict_reason=decided.reason,
        requirements=statuses,
        failures=sorted(failures, key=lambda f: (f.level != "MUST", f.requirement)),
        stats={"calls": verdict.calls, "capacity": header.get("capacity"),
               "history": list(paths), "mode": header.get("mode"),
               "violations": dict(verdict.counts)},
        api=str(header.get("api") or "R9"),
        notes=[f"history {', '.join(paths)}: {verdict.calls:,} calls", *verdict.gaps],
    )


def _described(call: Mapping[str, Any]) -> str:
    """A window's vector call in words."""
    op = call["op"]
    if op == "insert":
        block = call.get("block", {})
        return f"insert key {call['key']} (ref_cnt {block.get('ref_cnt')})"
    if op == "set_ref":
        return f"block {call['id']}: ref_cnt -> {call['ref_cnt']}"
    if op == "evict":
        return f"evict({call['n']}, protected={sorted(call['protected'])})"
    if op == "touch":
        return f"touch({list(call['keys'])})"
    if "key" in call:
        return f"{op}(key {call['key']})"
    return f"{op}()"


def _replay_hint(case: Mapping[str, Any] | None) -> str:
    if not case:
        return ""
    return ("# the window as a vector case: check-history --cases DIR writes it, and\n"
            "# policyspec replay DIR TARGET replays it on the policy\n")


def window_actions(calls: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A window's vector calls as the report's action records
    (``trace_record``): what the HTML page draws its timeline from. A
    ref_cnt write followed by its mark is the manager's completion or
    load, as the model's actions say it."""
    out: list[dict[str, Any]] = []
    key_of: dict[int, int] = {}
    ref: dict[int, int] = {}
    for call in calls:
        op = call["op"]
        if op == "insert":
            block = call.get("block", {})
            k, r = int(call["key"]), int(block.get("ref_cnt", -1))
            key_of[int(block.get("id", -1))] = k
            ref[k] = r
            out.append({"op": "insert", "key": k, "ref_cnt": r})
        elif op == "set_ref":
            k = key_of.get(int(call["id"]), -1)
            before, after = ref.get(k, -1), int(call["ref_cnt"])
            ref[k] = after
            if before == -1 and after == 0:
                out.append({"op": "finish_store", "key": k})
            elif after > before:
                out.append({"op": "start_read", "key": k})
            elif after < before:
                out.append({"op": "end_read", "key": k})
        elif op in ("get", "remove"):
            out.append({"op": op, "key": int(call["key"])})
            if op == "remove":
                ref.pop(int(call["key"]), None)
        elif op == "touch":
            out.append({"op": "touch", "keys": list(call["keys"])})
        elif op == "evict":
            out.append({"op": "evict", "n": call["n"], "protected": sorted(call["protected"])})
        elif op == "clear":
            out.append({"op": "clear"})
            ref.clear()
    return out
