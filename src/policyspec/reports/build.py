"""A run's report from its engine runs and its failures
(``findings.finish``): every requirement's status (PASS, FAIL, N/A, NOT
TESTED, with the reason), the verdict by the one rule
(``reports.verdict``), the notes and the counts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from policyspec.harness.lockstep import unobservable, unseen_in_process
from policyspec.profiles import Profile
from policyspec.registry import requirements_for
from policyspec.reports.report import (
    FAIL,
    NA,
    NOT_TESTED,
    PASS,
    FailureReport,
    Report,
    RequirementStatus,
)
from policyspec.reports.verdict import decide
from policyspec.run.result import EngineRun
from policyspec.subject import Subject

__all__ = ["assemble"]


def assemble(
    subject: Subject,
    profile: Profile,
    runs: Sequence[EngineRun],
    failures: Sequence[FailureReport],
    *,
    seed: int,
    strict: bool,
    capacity: int,
    seconds: float,
    cap: float | None = None,
    interrupted: bool = False,
) -> Report:
    """The report of a run of ``runs`` whose failures are ``failures``;
    ``interrupted``: a signal stopped it before the end, which the verdict
    weighs with the rest (``reports.verdict``) rather than after it."""
    checked: Counter[str] = Counter()
    not_applicable: dict[str, str] = {}
    unseen = unobservable(subject)
    errors = [f"{r.engine}: {r.error}" for r in runs if r.error]
    # A finding whose calls, replayed on a fresh policy, broke nothing
    # (findings.confirm) is no verdict on the policy: the run is in error.
    errors.extend(
        f"{f.engine}: the {f.engine} engine saw {f.requirement} broken, but a replay of the "
        f"same {len(f.trace)} calls on a fresh policy does not reproduce it (a "
        "non-deterministic policy, or a bug in policyspec): both runs are under its failure"
        for f in failures if not f.reproduced)
    for run in runs:
        checked.update(run.checked)
        not_applicable.update(run.not_applicable)
    best = {f.requirement for f in failures if f.reproduced}
    unreproduced = {f.requirement: f.engine for f in failures if not f.reproduced}
    shown_by = {rid: f.requirement for f in failures for rid in f.also_breaks}
    statuses: list[RequirementStatus] = []
    for req in requirements_for(profile.includes):
        missing = [need for need in req.needs if not subject.has(need)]
        # (The verdict ignores what the revision lacks the calls for, and
        # API-PROCESS-ALIVE in the checker's own process: policyspec.reports.verdict.)
        applies = not missing and req.id not in unseen_in_process(subject)
        if req.id in best:
            status, reason = FAIL, ""
        elif req.id in shown_by:
            status, reason = FAIL, (f"broken by the witness of {shown_by[req.id]}, which "
                                    "names the step that goes wrong first")
        elif req.id in unreproduced:
            status, reason = NOT_TESTED, (
                f"seen broken by the {unreproduced[req.id]} engine, but not on a replay of "
                "the same calls on a fresh policy: not judged (its failure below gives both "
                "runs)")
        elif missing:
            status, reason = NA, _lacks(subject, missing)
        elif req.id in not_applicable:
            status, reason = NA, not_applicable[req.id]
        elif checked[req.id] > 0:
            status, reason = PASS, ""
        else:
            status, reason = NOT_TESTED, unseen.get(req.id, "no engine exercised it")
        statuses.append(
            RequirementStatus(req.id, req.level, req.profile, req.title, status,
                              checked[req.id], reason, applies)
        )
    verdict = decide(statuses, failures, strict=strict, errors=errors,
                     interrupted=interrupted, incomplete=_incomplete(runs, cap))
    notes = list(subject.notes)
    for run in runs:
        notes.extend(f"{run.engine}: {n}" for n in run.notes)
    stats = {
        "seed": seed,
        "strict": strict,
        "seconds": round(seconds, 3),
        "calls": sum(r.calls for r in runs),
        "steps": sum(r.steps for r in runs),
        "examples": sum(r.examples for r in runs),
        "capacity": capacity,
        "engines": {
            r.engine: {"calls": r.calls, "steps": r.steps, "examples": r.examples,
                       "planned": r.planned, "seconds": round(r.seconds, 3), **r.counts}
            for r in runs
        },
    }
    return Report(
        target=subject.name,
        profile=profile.name,
        verdict=verdict.name,
        requirements=statuses,
        failures=list(failures),
        stats=stats,
        api=subject.api,
        notes=notes,
        errors=errors,
        placeholders=list(subject.placeholders),
        verdict_reason=verdict.reason,
    )


def _incomplete(runs: Sequence[EngineRun], cap: float | None) -> str | None:
    """How much of its work a run the time limit stopped did, in words;
    None when it did all of it."""
    if not any(r.capped for r in runs):
        return None
    done = sum(min(r.examples, r.planned) for r in runs if r.planned)
    planned = sum(r.planned for r in runs)
    return (f"the time limit (--time-limit) stopped the run before its work was done: "
            f"{done:,} of {planned:,} planned examples ran ("
            + ", ".join(f"{r.engine} {min(r.examples, r.planned):,}/{r.planned:,}"
                        for r in runs if r.capped) + ")")


def _lacks(subject: Subject, missing: list[str]) -> str:
    """Why a requirement does not apply: the policy, or the API revision it
    is driven as (vLLM 0.34's R10 has no touch), lacks what it needs."""
    if missing == ["touch"]:
        return f"API revision {subject.api} has no touch"
    return f"the policy has no {', '.join(missing)}"
