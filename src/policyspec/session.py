"""``run_check``: every engine on one subject under one profile, turned into
a Report. This is what ``policyspec check``, the pytest plugin and the
conformance modules call.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import cast

from policyspec.engines import ENGINES, Engine, EngineRun, Finding
from policyspec.engines.explain import culprit
from policyspec.engines.minimise import minimise
from policyspec.engines.render import describe, repro
from policyspec.engines.reproduce import fails_with, failure_of
from policyspec.engines.shrink import shrink
from policyspec.harness import Aborted
from policyspec.harness.watchdog import Watchdog
from policyspec.harness.watchdog import current as watch
from policyspec.profiles import Profile
from policyspec.registry import load_registry, requirements_for
from policyspec.report import (
    FAIL,
    NA,
    NOT_TESTED,
    PASS,
    FailureReport,
    Report,
    RequirementStatus,
)
from policyspec.subject import Subject

__all__ = [
    "BUDGETS",
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_CAPACITY",
    "Budget",
    "run_check",
    "shard_seed",
]

DEFAULT_CAPACITY = 64
DEFAULT_CALL_TIMEOUT = 10.0
"""Seconds one policy call may take before it is reported (API-RETURNS)."""


@dataclass(frozen=True)
class Budget:
    name: str
    seconds: float
    """Wall-clock seconds the engines share (the run adds a little on top)."""


BUDGETS = {
    "quick": Budget("quick", 15.0),
    "standard": Budget("standard", 50.0),
    "deep": Budget("deep", 240.0),
}


def run_check(
    subject: Subject,
    profile: Profile,
    *,
    budget: str | float = "standard",
    seed: int = 0,
    strict: bool = False,
    engines: Iterable[str | Engine] | None = None,
    capacity: int = DEFAULT_CAPACITY,
    progress: Callable[[str], None] | None = None,
    call_timeout: float = DEFAULT_CALL_TIMEOUT,
    shard: tuple[int, int] = (1, 1),
) -> Report:
    """Check ``subject`` against ``profile`` and return the report. Engines
    run in turn, each for its share of the budget; the first MUST failure
    found by one engine does not stop the others (they look for more).
    ``shard=(k, n)`` runs the k-th of n deterministic parts of the work:
    engines marked ``shardable`` split their search space by it, the others
    run with the seed ``shard_seed(seed, shard)``."""
    say = progress or (lambda _msg: None)
    seconds = budget if isinstance(budget, int | float) else BUDGETS[budget].seconds
    chosen = [ENGINES[e] if isinstance(e, str) else e for e in engines] if engines else [
        e for e in ENGINES.values() if e.default
    ]
    chosen = [e for e in chosen if e.applies(profile)]
    total_share = sum(e.share for e in chosen) or 1.0
    started = time.monotonic()
    runs: list[EngineRun] = []
    interrupted = False
    with Watchdog(call_timeout) as watchdog:
        try:
            for engine in chosen:
                share = seconds * engine.share / total_share
                say(f"{engine.name}: running for up to {share:.0f}s")
                run = _run_engine(engine, subject, profile, share, seed, capacity, shard)
                runs.append(run)
                say(
                    f"{engine.name}: {run.calls} calls, {run.steps} steps, "
                    f"{len(run.findings)} finding(s) in {run.seconds:.1f}s"
                )
        except KeyboardInterrupt:
            interrupted = True
            say("interrupted: reporting what ran so far")
        report = _report(
            subject, profile, runs, seed, strict, capacity, time.monotonic() - started,
            minimise=not interrupted,
        )
    if shard != (1, 1):
        report.stats["shard"] = f"{shard[0]}/{shard[1]}"
    if not watchdog.enforced and call_timeout > 0:
        report.notes.append("the call time limit was not enforced (not on the main thread)")
    if interrupted:
        report.verdict = "interrupted"
        report.notes.append("interrupted before the end: engines that ran: "
                            + (", ".join(r.engine for r in runs) or "none"))
    return report


def shard_seed(seed: int, shard: tuple[int, int]) -> int:
    """The seed shard K of N gives the engines that are not ``shardable``
    (random and Hypothesis engines): ``seed * N + K - 1``. Shards of one
    campaign get distinct seeds, hence different examples; ``1/1`` keeps the
    seed itself; the same seed and shard always give the same run."""
    index, total = shard
    return seed * total + index - 1


def _run_engine(
    engine: Engine, subject: Subject, profile: Profile, seconds: float, seed: int, capacity: int,
    shard: tuple[int, int] = (1, 1),
) -> EngineRun:
    try:
        if engine.shardable:
            sharded = cast(Callable[..., EngineRun], engine.run)
            return sharded(subject, profile, seconds, seed, capacity, shard=shard)
        return engine.run(subject, profile, seconds, shard_seed(seed, shard), capacity)
    except Aborted as aborted:
        run = EngineRun(engine=engine.name)
        failure = aborted.failure
        run.add(Finding(failure.requirement, failure.message, failure.trace, engine.name))
        return run
    except Exception as exc:  # a checker bug must not pass as a verdict
        return EngineRun(engine=engine.name, error=f"{type(exc).__name__}: {exc}")


def _minimise(subject: Subject, profile: Profile, capacity: int, finding: Finding) -> Finding:
    trace = finding.trace
    family = _family(profile, finding.requirement)
    if not finding.shrunk and finding.requirement in ("API-RETURNS", "API-PROCESS-ALIVE"):
        # Every replay that still hangs costs the time limit: lower it and
        # try few candidates.
        saved, watch.limit = watch.limit, min(watch.limit, 0.5)
        try:
            trace = shrink(trace, fails_with(subject, profile, capacity, finding.requirement),
                           max_tries=40)
        finally:
            watch.limit = saved
    elif not finding.shrunk:
        trace = minimise(trace, fails_with(subject, profile, capacity, family))
    requirement, message = finding.requirement, finding.message
    if trace != finding.trace:
        # The message must describe the minimal trace, not the first one found.
        again = failure_of(subject, profile, capacity, trace, fatal=family.__contains__)
        if again is not None and again.requirement in family:
            requirement, message = again.requirement, again.message
    requirement = culprit(subject, profile, capacity, trace, requirement)
    return Finding(requirement, message, trace, finding.engine, True)


def _family(profile: Profile, requirement: str) -> frozenset[str]:
    """The ids a shrunk trace may fail with and still show the same fault: a
    refinement's wrong victims and its needless refusal are both a wrong
    order, and ``culprit`` names the operation behind either."""
    refinement = profile.refinement
    if refinement is not None:
        family = frozenset((refinement.order_requirement, refinement.liveness_requirement))
        if requirement in family:
            return family
    return frozenset((requirement,))


def _report(
    subject: Subject,
    profile: Profile,
    runs: list[EngineRun],
    seed: int,
    strict: bool,
    capacity: int,
    seconds: float,
    *,
    minimise: bool = True,
) -> Report:
    registry = load_registry()
    checked: Counter[str] = Counter()
    not_applicable: dict[str, str] = {}
    best: dict[str, Finding] = {}
    errors = [f"{r.engine}: {r.error}" for r in runs if r.error]
    for run in runs:
        checked.update(run.checked)
        not_applicable.update(run.not_applicable)
        for finding in run.findings:
            if minimise:
                finding = _minimise(subject, profile, capacity, finding)
            old = best.get(finding.requirement)
            if old is None or len(finding.trace) < len(old.trace):
                best[finding.requirement] = finding
    statuses: list[RequirementStatus] = []
    for req in requirements_for(profile.includes):
        missing = [need for need in req.needs if not subject.has(need)]
        if req.id in best:
            status, reason = FAIL, ""
        elif missing:
            status, reason = NA, f"the policy has no {', '.join(missing)}"
        elif req.id in not_applicable:
            status, reason = NA, not_applicable[req.id]
        elif checked[req.id] > 0:
            status, reason = PASS, ""
        else:
            status, reason = NOT_TESTED, "no engine exercised it"
        statuses.append(
            RequirementStatus(req.id, req.level, req.profile, req.title, status,
                              checked[req.id], reason)
        )
    failures = []
    for rid, finding in best.items():
        known = registry.get(rid)
        failures.append(
            FailureReport(
                requirement=rid,
                level=known.level if known else "MUST",
                title=known.title if known else rid,
                message=finding.message,
                trace=[describe(a) for a in finding.trace],
                repro=repro(subject.name, capacity, finding.trace, f"{rid}: {finding.message}"),
                engine=finding.engine,
            )
        )
    failures.sort(key=lambda f: (f.level != "MUST", f.requirement))
    failing_levels = {f.level for f in failures}
    if errors:
        verdict = "error"
    elif "MUST" in failing_levels or (strict and "SHOULD" in failing_levels):
        verdict = "fail"
    else:
        verdict = "pass"
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
                       "seconds": round(r.seconds, 3), **r.counts}
            for r in runs
        },
    }
    return Report(
        target=subject.name,
        profile=profile.name,
        verdict=verdict,
        requirements=statuses,
        failures=failures,
        stats=stats,
        api=subject.api,
        notes=notes,
        errors=errors,
    )
