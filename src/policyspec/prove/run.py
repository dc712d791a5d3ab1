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

from policyspec.prove.canonical import MAX_KEYS, MAX_LIST, MAX_REF, OPERATIONS
from policyspec.prove.commute import ProofSubject
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
from policyspec.prove.findings import model_finding, refinement_finding, trace_finding
from policyspec.prove.proof_report import ObligationResult, ProofReport
from policyspec.prove.proof_target import ProveUsageError, TargetSpec, load_proof_subject
from policyspec.prove.traces import TRACE_KEYS, TRACE_STEPS

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
_COST_ORDER = ("clear", "get", "mark_evictable", "remove", "mark_non_evictable", "insert",
               "touch", "evict")
"""Obligations from the quickest to exhaust (measured on the reference LRU)
to the ones that use their whole share."""

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


def _summarise(result: JobResult) -> ObligationResult:
    confirmed = sum(1 for c in result.conditions if c.status == CONFIRMED)
    detail = ""
    if result.status in (ERROR, STOPPED):
        said = [f"line {c.line}: {c.text}" for c in result.conditions if c.status == ERROR]
        stderr = result.stderr.strip().splitlines()
        detail = said[0] if said else stderr[-1] if stderr else ""
    return ObligationResult(result.job.name, result.status, result.seconds, result.share,
                            max(result.job.conditions, len(result.conditions)), confirmed,
                            detail)


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
    def refinement(self) -> bool:
        return self.subject.abstraction is not None


def plan_target(spec: TargetSpec, only: Sequence[str] = ()) -> TargetPlan:
    """Load the policy and choose the obligations: refinement when it has an
    abstraction pair, else the call-sequence fallback. ProveUsageError for
    user mistakes."""
    subject = load_proof_subject(spec)
    unknown = [o for o in only if o not in OPERATIONS]
    if unknown:
        raise ProveUsageError(f"unknown operation {unknown[0]!r} for --only "
                              f"(choose from: {', '.join(OPERATIONS)})")
    env = spec.environment()
    if subject.abstraction is None:
        return TargetPlan(
            subject,
            [Job("call sequences", f"{_OBLIGATIONS}.explores_calls", "asserts", 1, env)],
            "WEAKER FALLBACK: no abstraction pair was found, so CrossHair searches short call "
            "sequences from a fresh policy; it is weak on sequences and finds shallow faults "
            "only (register a pair: spec/prove.md)",
            [f"at most {TRACE_STEPS} caller actions over {TRACE_KEYS} keys (capacity "
             f"{TRACE_KEYS}), each one the caller contract allows at that point "
             "(policyspec.prove.traces.options)"],
        )
    ops = [op for op in OPERATIONS if not only or op in only]
    if not subject.subject.has("clear"):
        ops = [op for op in ops if op != "clear"]
    if not subject.subject.has("mark"):
        ops = [op for op in ops if not op.startswith("mark")]
    return TargetPlan(
        subject,
        [Job(op, f"{_OBLIGATIONS}.refines_{op}", "asserts", 1, env) for op in ops],
        "refinement, one operation at a time from a symbolic pre-state, through the "
        f"abstraction pair {subject.abstraction.origin}",
        [f"pre-states the manager can leave: at most {MAX_KEYS} keys, every ref_cnt in "
         f"-1..{MAX_REF}, any idle order (keys named canonically, policyspec.prove.canonical)",
         f"touch and protected name at most {MAX_LIST} keys, present or absent; evict n up "
         "to keys + 1"],
    )


def prove_target(
    spec: TargetSpec,
    budget: float = DEFAULT_TARGET_BUDGET,
    *,
    workers: int | None = None,
    only: Sequence[str] = (),
    progress: Progress | None = None,
) -> ProofReport:
    """Check ``spec.target`` against its profile (``plan_target``) and
    replay every counterexample. Raises ProveUsageError for user mistakes."""
    plan = plan_target(spec, only)
    if not plan.jobs:
        raise ProveUsageError(f"no operation of {spec.target} to check")
    parallel = _workers(workers, len(plan.jobs))
    times = Budget(budget, len(plan.jobs), parallel)
    # Likely to end early first, so that their time goes to touch and evict.
    order = sorted(plan.jobs, key=lambda job: _COST_ORDER.index(job.name)
                   if job.name in _COST_ORDER else len(_COST_ORDER))
    start = time.monotonic()
    by_name = {r.job.name: r for r in run_jobs(order, times, _reporter(progress))}
    results = [by_name[job.name] for job in plan.jobs]
    report = ProofReport(
        title=f"{spec.target}, profile {spec.profile}" + (" (strict)" if spec.strict else ""),
        method=plan.method, bounds=plan.bounds, budget=times,
    )
    for result in results:
        report.results.append(_summarise(result))
        for condition in result.conditions:
            if condition.status != COUNTEREXAMPLE:
                continue
            if plan.refinement:
                report.findings.append(
                    refinement_finding(plan.subject, spec, result.job.name, condition.text)
                )
            else:
                report.findings.append(trace_finding(plan.subject, spec, condition.text))
    report.seconds = time.monotonic() - start
    return report
