"""``prove_model`` and ``prove_target``: plan the CrossHair jobs, run them
under a budget, replay what they report, and say what was established.

Three outcomes per obligation, kept apart in every report: *confirmed over
all paths* (CrossHair exhausted the paths: the obligation holds for every
argument within the stated bounds), *not confirmed* (no counterexample
within the budget: evidence, not proof), and *counterexample* (replayed
concretely before it is reported).
"""

from __future__ import annotations

import importlib
import inspect
import linecache
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from policyspec.prove.canonical import legal_values
from policyspec.prove.commute import ProofSubject
from policyspec.prove.counterexamples import derived_finding, model_finding, refinement_finding
from policyspec.prove.crosshair_run import (
    CONFIRMED,
    COUNTEREXAMPLE,
    ERROR,
    STOPPED,
    Budget,
    Job,
    JobResult,
    run_jobs,
)
from policyspec.prove.derived import VARIANTS
from policyspec.prove.operation_bounds import STATE_BOUND, bound_of, operations_of
from policyspec.prove.proof_report import ObligationResult, ProofReport
from policyspec.prove.proof_target import ProveUsageError, TargetSpec, load_proof_subject

__all__ = [
    "DEFAULT_MODEL_BUDGET",
    "DEFAULT_TARGET_BUDGET",
    "MODEL_MODULES",
    "TargetPlan",
    "model_jobs",
    "plan_target",
    "prove_model",
    "prove_target",
]

MODEL_MODULES = (
    "policyspec.model.state",
    "policyspec.model.operations",
    "policyspec.model.evict",
    "policyspec.model.arc",
)
"""Modules whose PEP 316 contracts ``prove --model`` checks (those that
exist: the arc refinement is optional)."""
DEFAULT_MODEL_BUDGET = 300.0
DEFAULT_TARGET_BUDGET = 240.0
_OBLIGATIONS = "policyspec.prove.obligations"
_COST_ORDER = ("clear", "mark_non_evictable", "mark_evictable", "remove", "insert",
               "on_store_miss", "get", "on_request_access", "evict", "touch",
               "on_request_finished")
"""Obligations from the fewest paths to the most (``legal_values``: 38 for
mark_non_evictable, 3,232 for evict, 10,446 for on_request_finished), so
that the ones that end early leave their time to the others."""

Progress = Callable[[str], None]


def _contract_lines(obj: object) -> list[str]:
    doc = inspect.getdoc(obj) or ""
    return [line.strip() for line in doc.splitlines()
            if line.strip().startswith(("pre:", "post:", "inv:", "post["))]


def model_jobs(only: Sequence[str] = ()) -> list[Job]:
    """One job per contracted function or class of MODEL_MODULES, in
    source order; ``only`` keeps names ending with one of its entries."""
    jobs: list[tuple[str, int, Job]] = []
    for module_name in MODEL_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        for name, obj in vars(module).items():
            if getattr(obj, "__module__", None) != module_name or name.startswith("_"):
                continue
            if not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            lines = _contract_lines(obj)
            if not lines:
                continue
            short = f"{module_name.rsplit('.', 1)[1]}.{name}"
            if only and not any(short == o or short.endswith("." + o) for o in only):
                continue
            posts = sum(1 for line in lines if not line.startswith("pre:"))
            line_no = inspect.getsourcelines(obj)[1]
            jobs.append((module_name, line_no,
                         Job(short, f"{module_name}.{name}", "PEP316", max(1, posts))))
    jobs.sort(key=lambda item: (MODEL_MODULES.index(item[0]), item[1]))
    return [job for _, _, job in jobs]


def _workers(workers: int | None, jobs: int) -> int:
    return max(1, min(workers or os.cpu_count() or 1, jobs))


def _summarise(result: JobResult, bound: str = "", values: int = 0) -> ObligationResult:
    confirmed = sum(1 for c in result.conditions if c.status == CONFIRMED)
    detail = ""
    if result.status in (ERROR, STOPPED):
        said = [f"line {c.line}: {c.text}" for c in result.conditions if c.status == ERROR]
        stderr = result.stderr.strip().splitlines()
        detail = said[0] if said else stderr[-1] if stderr else ""
    return ObligationResult(result.job.name, result.status, result.seconds, result.share,
                            max(result.job.conditions, len(result.conditions)), confirmed,
                            detail, bound, values)


def _reporter(progress: Progress | None) -> Callable[[JobResult], None] | None:
    if progress is None:
        return None

    def report(result: JobResult) -> None:
        progress(f"{result.job.name}: {result.status} ({result.seconds:.0f} s)")

    return report


def prove_model(
    budget: float = DEFAULT_MODEL_BUDGET,
    *,
    workers: int | None = None,
    only: Sequence[str] = (),
    progress: Progress | None = None,
) -> ProofReport:
    """Check every model transition's PEP 316 contract with CrossHair."""
    jobs = model_jobs(only)
    if not jobs:
        raise ProveUsageError(f"no model function matches {', '.join(only)}")
    parallel = _workers(workers, len(jobs))
    plan = Budget(budget, sum(j.conditions for j in jobs), parallel)
    start = time.monotonic()
    results = run_jobs(jobs, plan, _reporter(progress))
    report = ProofReport(
        title="the model (policyspec.model)",
        method="CrossHair on the PEP 316 contracts of every transition, from any state "
        "meeting the invariants (State inv: well_formed) and the precondition",
        bounds=["none: states and arguments are unbounded, so CrossHair cannot explore every "
                "path; 'not confirmed' is what a correct model usually gets"],
        budget=plan,
    )
    for result in results:
        report.results.append(_summarise(result))
        for condition in result.conditions:
            if condition.status != COUNTEREXAMPLE:
                continue
            text = linecache.getline(condition.file, condition.line).strip()
            text = text.split(":", 1)[1].strip() if ":" in text else text
            report.findings.append(model_finding(result.job.qualname, text, condition.text))
    report.seconds = time.monotonic() - start
    return report


@dataclass(frozen=True)
class TargetPlan:
    """What ``prove_target`` will run for a policy, and how to describe it."""

    subject: ProofSubject
    jobs: list[Job]
    method: str
    bounds: list[str]

    @property
    def derived(self) -> bool:
        """The derived pair (else a hand-written one)."""
        return self.subject.abstraction is None


def plan_target(spec: TargetSpec, only: Sequence[str] = ()) -> TargetPlan:
    """Load the policy and choose its obligations: one per operation of its
    revision (policyspec.prove.operation_bounds), through the derived pair unless
    a hand-written one was asked for. ProveUsageError for user mistakes."""
    subject = load_proof_subject(spec)
    derived = subject.abstraction is None
    available = operations_of(subject.subject, hooks=derived)
    unknown = [o for o in only if o not in available]
    if unknown:
        raise ProveUsageError(f"unknown operation {unknown[0]!r} for --only (this policy's, "
                              f"API {subject.subject.api}: {', '.join(available)})")
    env = spec.environment()
    ops = [op for op in available if not only or op in only]
    jobs = [Job(op, f"{_OBLIGATIONS}.refines_{op}", "asserts", 1, env) for op in ops]
    if derived:
        method = (
            "one operation at a time from a symbolic pre-state, through the derived pair: the "
            "state built by the calls vLLM's manager makes and read back by get and by "
            "evictions on copies (policyspec.prove.derived), judged by the profile's model as "
            f"check judges; API {subject.subject.api}"
        )
    else:
        origin = subject.abstraction.origin if subject.abstraction else ""
        method = ("one operation at a time from a symbolic pre-state, through the hand-written "
                  f"abstraction pair {origin}")
    bounds = [STATE_BOUND, *(f"{op}: {_bound(op, derived)}" for op in ops)]
    return TargetPlan(subject, jobs, method, bounds)


def _bound(op: str, derived: bool) -> str:
    """The arguments ``op``'s obligation covers, with the derived pair's
    variants of the call (policyspec.prove.derived)."""
    variant = VARIANTS.get(op) if derived else None
    return bound_of(op) + (f"; {variant}" if variant else "")


def prove_target(
    spec: TargetSpec,
    budget: float = DEFAULT_TARGET_BUDGET,
    *,
    workers: int | None = None,
    only: Sequence[str] = (),
    iterations: int | None = None,
    fail_fast: bool = False,
    progress: Progress | None = None,
) -> ProofReport:
    """Check ``spec.target`` against its profile (``plan_target``) and
    replay every counterexample. ``iterations`` bounds each obligation by a
    count of CrossHair paths that find nothing new (``--max_uninteresting_
    iterations``) instead of its share of the budget, which then only caps
    it; ``fail_fast`` stops every obligation at the first counterexample.
    Raises ProveUsageError for user mistakes."""
    plan = plan_target(spec, only)
    if not plan.jobs:
        raise ProveUsageError(f"no operation of {spec.target} to check")
    parallel = _workers(workers, len(plan.jobs))
    times = Budget(budget, len(plan.jobs), parallel, iterations)
    # Likely to end early first, so that their time goes to touch and evict;
    # when the first counterexample ends the run, evict first: most faults
    # show in one eviction.
    costs = ("evict", *_COST_ORDER) if fail_fast else _COST_ORDER
    order = sorted(plan.jobs, key=lambda job: costs.index(job.name)
                   if job.name in costs else len(costs))
    start = time.monotonic()
    by_name = {r.job.name: r for r in run_jobs(order, times, _reporter(progress),
                                               fail_fast=fail_fast)}
    results = [by_name[job.name] for job in plan.jobs]
    report = ProofReport(
        title=f"{spec.target}, profile {spec.profile}" + (" (strict)" if spec.strict else ""),
        method=plan.method, bounds=plan.bounds, budget=times,
        target=spec.target, profile=spec.profile, api=plan.subject.subject.api,
        strict=spec.strict,
    )
    for result in results:
        op = result.job.name
        count = len(legal_values(op)) if result.status == CONFIRMED else 0
        report.results.append(_summarise(result, bound_of(op), count))
        for condition in result.conditions:
            if condition.status != COUNTEREXAMPLE:
                continue
            if plan.derived:
                found = derived_finding(plan.subject, spec, result.job.name, condition.text)
            else:
                found = refinement_finding(plan.subject, spec, result.job.name, condition.text)
            report.findings.append(found)
    report.seconds = time.monotonic() - start
    return report
