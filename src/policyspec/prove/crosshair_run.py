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
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

__all__ = [
    "CONFIRMED",
    "COUNTEREXAMPLE",
    "ERROR",
    "NOT_CONFIRMED",
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

_LINE = re.compile(r"^(?P<file>.+?):(?P<line>\d+): (?P<level>info|error): (?P<text>.*)$")


@dataclass(frozen=True)
class Budget:
    """CPU seconds CrossHair may spend per condition and per path, and the
    wall-clock deadline after which children are stopped."""

    per_condition: float
    per_path: float
    deadline: float
    """Seconds of wall-clock time for the whole run."""

    @classmethod
    def split(cls, seconds: float, conditions: int, workers: int) -> Budget:
        """Spread ``seconds`` of wall-clock time over ``conditions`` run
        ``workers`` at a time; 15% is kept for starting the children. The
        deadline allows for a loaded machine (CPU time is what CrossHair
        counts), and stops the run at three times the target. Per path:
        the square root of the condition's share, CrossHair's own default."""
        share = max(2.0, seconds * 0.85 * workers / max(1, conditions))
        return cls(share, max(1.0, share**0.5), seconds * 3 + 60)


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

    @property
    def status(self) -> str:
        """The worst status of the job's conditions."""
        if self.returncode is None:
            return STOPPED
        order = (COUNTEREXAMPLE, ERROR, NOT_CONFIRMED, CONFIRMED)
        found = {c.status for c in self.conditions}
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


def _command(job: Job, budget: Budget) -> list[str]:
    return [
        sys.executable, "-m", "crosshair", "check", job.qualname,
        "--report_all",
        f"--analysis_kind={job.kind}",
        f"--per_condition_timeout={budget.per_condition:g}",
        f"--per_path_timeout={budget.per_path:g}",
    ]


def run_jobs(
    jobs: Sequence[Job],
    budget: Budget,
    workers: int,
    progress: Callable[[JobResult], None] | None = None,
) -> list[JobResult]:
    """Run every job, ``workers`` at a time, until done or the deadline."""
    end = time.monotonic() + budget.deadline

    def run(job: Job) -> JobResult:
        start = time.monotonic()
        left = end - start
        if left <= 0:
            return JobResult(job, [], 0.0, None, "not started before the deadline")
        env = {**os.environ, **job.env}
        try:
            done = subprocess.run(
                _command(job, budget), capture_output=True, text=True, env=env,
                timeout=left, check=False,
            )
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
            result = JobResult(job, parse_output(out), time.monotonic() - start, None,
                               "stopped at the deadline")
        else:
            result = JobResult(job, parse_output(done.stdout), time.monotonic() - start,
                               done.returncode, done.stderr[-4000:])
        if progress is not None:
            progress(result)
        return result

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(run, jobs))
