"""Running ``python -m crosshair check`` and reading what it says.

One child process per function analysed, a few at a time: a child can be
stopped at the deadline without losing the others' results, CrossHair's
patching of builtins stays out of the policyspec process, and a target is
named to the child through its environment. With ``--report_all`` CrossHair
prints one line per condition: ``Confirmed over all paths.`` (every path
explored: the condition holds within the bounds of the arguments),
``Not confirmed.`` (no counterexample within the budget: not a proof), or an
``error`` line with a counterexample ``... when calling f(args)``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

__all__ = [
    "CONFIRMED",
    "COUNTEREXAMPLE",
    "ERROR",
    "INTERRUPTED",
    "MIN_SHARE",
    "NOT_CONFIRMED",
    "SKIPPED",
    "STOPPED",
    "Budget",
    "Condition",
    "Job",
    "JobResult",
    "parse_output",
    "run_jobs",
]

CONFIRMED = "confirmed"
"""CrossHair explored every path: holds within the argument bounds."""
NOT_CONFIRMED = "not confirmed"
"""No counterexample within the budget; paths were left unexplored."""
COUNTEREXAMPLE = "counterexample"
ERROR = "error"
"""CrossHair could not analyse (import error, precondition unsatisfiable...)."""
STOPPED = "stopped"
"""The child was stopped at the run's deadline before it reported."""
SKIPPED = "skipped"
"""Not run to the end: another job found a counterexample first
(``fail_fast``). Establishes nothing, and is no error."""
INTERRUPTED = "interrupted"
"""Stopped, or never started, because the run was interrupted (Ctrl-C)."""

_LINE = re.compile(r"^(?P<file>.+?):(?P<line>\d+): (?P<level>info|error): (?P<text>.*)$")


MIN_SHARE = 2.0
"""CPU seconds per condition, at least: less and CrossHair barely starts."""


@dataclass(frozen=True)
class Budget:
    """How ``seconds`` of wall-clock time are spread over the conditions of
    a run, ``workers`` CrossHair processes at a time.

    Each job's share is decided when it starts: the time left, times the
    workers, over the conditions not started yet, with 15% kept for starting
    processes. A job that ends early (CrossHair exhausted its paths) so
    leaves more to the jobs after it. CrossHair counts CPU time, so on a
    loaded machine a run takes longer than ``seconds``; every child is
    stopped at the ``deadline``, six times the target plus a minute (a
    safety net for a machine busy with other work).
    CrossHair's per-path timeout is the square root of the share, its own
    default."""

    seconds: float
    conditions: int
    workers: int
    iterations: int | None = None
    """When set, each condition ends after this many CrossHair paths in a
    row that reach no new code (``--max_uninteresting_iterations``), a
    count that gives the same search on any machine; its share of the time
    then only caps it."""

    @property
    def deadline(self) -> float:
        return self.seconds * 6 + 60

    def share(self, left: float, remaining: int, jobs: int | None = None) -> float:
        """CPU seconds per condition with ``left`` seconds of the target
        left and ``remaining`` conditions in ``jobs`` jobs not started (a job
        uses one core: fewer jobs than workers cannot use them all)."""
        cores = self.workers if jobs is None else max(1, min(self.workers, jobs))
        return max(MIN_SHARE, left * 0.85 * cores / max(1, remaining))

    @property
    def per_condition(self) -> float:
        """The first jobs' share."""
        return self.share(self.seconds, self.conditions)

    @staticmethod
    def per_path(share: float) -> float:
        return max(1.0, float(share**0.5))


@dataclass(frozen=True)
class Job:
    """One function (or class) for ``crosshair check``."""

    name: str
    qualname: str
    kind: str
    """``asserts`` or ``PEP316``."""
    conditions: int = 1
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Condition:
    """One line of CrossHair's report."""

    status: str
    file: str
    line: int
    text: str


@dataclass
class JobResult:
    job: Job
    conditions: list[Condition]
    seconds: float
    returncode: int | None
    stderr: str = ""
    share: float = 0.0
    """CPU seconds per condition this job was given."""
    skipped: bool = False
    """Stopped, or never started, because another job found a
    counterexample (``run_jobs(fail_fast=True)``)."""
    interrupted: bool = False
    """Stopped, or never started, because the run was interrupted."""

    @property
    def status(self) -> str:
        """The worst status of the job's conditions."""
        found = {c.status for c in self.conditions}
        if self.interrupted and COUNTEREXAMPLE not in found:
            return INTERRUPTED
        if self.skipped and COUNTEREXAMPLE not in found:
            return SKIPPED
        if self.returncode is None:
            return STOPPED
        order = (COUNTEREXAMPLE, ERROR, NOT_CONFIRMED, CONFIRMED)
        if not found:
            return ERROR if self.returncode != 0 else NOT_CONFIRMED
        return next(s for s in order if s in found)


def parse_output(stdout: str) -> list[Condition]:
    """The condition lines of ``crosshair check --report_all`` output."""
    found = []
    for raw in stdout.splitlines():
        match = _LINE.match(raw)
        if match is None:
            continue
        text = match["text"]
        if match["level"] == "error":
            status = COUNTEREXAMPLE if " when calling " in text else ERROR
        elif text.startswith("Confirmed over all paths"):
            status = CONFIRMED
        elif text.startswith("Not confirmed"):
            status = NOT_CONFIRMED
        else:  # e.g. "Unable to meet precondition": nothing was established
            status = ERROR
        found.append(Condition(status, match["file"], int(match["line"]), text))
    return found


def _command(job: Job, share: float, iterations: int | None = None) -> list[str]:
    bounds = [f"--max_uninteresting_iterations={iterations}"] if iterations else []
    return [
        sys.executable, "-m", "crosshair", "check", job.qualname,
        "--report_all",
        f"--analysis_kind={job.kind}",
        f"--per_condition_timeout={share:.3g}",
        f"--per_path_timeout={Budget.per_path(share):.3g}",
        *bounds,
    ]


def run_jobs(
    jobs: Sequence[Job],
    budget: Budget,
    progress: Callable[[JobResult], None] | None = None,
    *,
    fail_fast: bool = False,
) -> list[JobResult]:
    """Run every job, ``budget.workers`` at a time, in the order given (put
    the ones likely to end early first), until done or the deadline. With
    ``fail_fast`` the first counterexample stops the children still running
    and the jobs not started (their results say ``skipped``). A
    KeyboardInterrupt stops every child and returns what reported before
    it (the others say ``interrupted``): a Ctrl-C loses no result."""
    start = time.monotonic()
    target_end, end = start + budget.seconds, start + budget.deadline
    lock = threading.Lock()
    remaining = [sum(job.conditions for job in jobs), len(jobs)]
    found = threading.Event()
    stop = threading.Event()
    running: set[subprocess.Popen[str]] = set()

    def run(job: Job) -> JobResult:
        begun = time.monotonic()
        with lock:
            share = budget.share(target_end - begun, remaining[0], remaining[1])
            remaining[0] -= job.conditions
            remaining[1] -= 1
            if stop.is_set():
                return JobResult(job, [], 0.0, 1, "", share, interrupted=True)
            if found.is_set():
                return JobResult(job, [], 0.0, 1, "", share, skipped=True)
            if end - begun <= 0:
                return JobResult(job, [], 0.0, None, "not started before the deadline", share)
            child = subprocess.Popen(
                _command(job, share, budget.iterations), stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True, env={**os.environ, **job.env},
            )
            running.add(child)
        try:
            out, err = child.communicate(timeout=end - begun)
        except subprocess.TimeoutExpired:
            child.kill()
            out, _ = child.communicate()
            result = JobResult(job, parse_output(out), time.monotonic() - begun, None,
                               "stopped at the deadline", share, interrupted=stop.is_set())
        else:
            result = JobResult(job, parse_output(out), time.monotonic() - begun,
                               child.returncode, err[-4000:], share,
                               skipped=child.returncode < 0 and found.is_set(),
                               interrupted=child.returncode != 0 and stop.is_set())
        with lock:
            running.discard(child)
            if fail_fast and result.status == COUNTEREXAMPLE and not found.is_set():
                found.set()
                for other in running:
                    other.terminate()
        if progress is not None and not stop.is_set():
            progress(result)
        return result

    with ThreadPoolExecutor(max_workers=max(1, budget.workers)) as pool:
        futures: list[Future[JobResult]] = []
        try:
            for job in jobs:
                futures.append(pool.submit(run, job))
            return [future.result() for future in futures]
        except KeyboardInterrupt:
            with lock:
                stop.set()
                for child in running:
                    child.kill()
            results = [future.result() for future in futures]
            results.extend(JobResult(job, [], 0.0, 1, "", 0.0, interrupted=True)
                           for job in jobs[len(futures):])
            return results
