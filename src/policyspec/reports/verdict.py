"""The verdict rule, written once (spec/report.md, "Verdicts"): a run's
requirement statuses and failures give its verdict, a one-line reason and
its exit code. ``policyspec check``, the pytest plugin, merged shards,
``--known-failing`` and vector replays all call ``decide``, so a report
read back or merged gets the verdict its run got.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from policyspec.exits import (
    EXIT_CONFORMS,
    EXIT_FAILS,
    EXIT_INCOMPLETE,
    EXIT_UNJUDGED,
    EXIT_USAGE,
)
from policyspec.reports.report import NA, NOT_TESTED, FailureReport, Report, RequirementStatus

__all__ = [
    "ERROR",
    "FAIL",
    "INCOMPLETE",
    "INTERRUPTED",
    "PASS",
    "UNJUDGED",
    "VERDICTS",
    "Verdict",
    "counts",
    "decide",
    "exit_code",
    "judged_strictly",
    "unjudged_musts",
]

PASS, FAIL, UNJUDGED, ERROR, INTERRUPTED = "pass", "fail", "unjudged", "error", "interrupted"
INCOMPLETE = "incomplete"
VERDICTS = (PASS, FAIL, UNJUDGED, INCOMPLETE, ERROR, INTERRUPTED)


@dataclass(frozen=True)
class Verdict:
    """A verdict and why, in one line (empty for a plain pass or fail)."""

    name: str
    reason: str = ""


def counts(level: str, strict: bool) -> bool:
    """Whether a failure of a requirement of ``level`` makes a run fail: a
    MUST always, a SHOULD under ``strict`` (``--strict``)."""
    return level == "MUST" or (strict and level == "SHOULD")


def unjudged_musts(statuses: Iterable[RequirementStatus]) -> list[RequirementStatus]:
    """The MUSTs that apply to the policy and stayed n/a or not tested."""
    return [s for s in statuses
            if s.level == "MUST" and s.applies and s.status in (NA, NOT_TESTED)]


def decide(
    statuses: Sequence[RequirementStatus],
    failures: Sequence[FailureReport],
    *,
    strict: bool,
    errors: Sequence[str] = (),
    interrupted: bool = False,
    stale: Sequence[str] = (),
    incomplete: str | None = None,
    unjudged: Sequence[str] = (),
) -> Verdict:
    """The verdict of a run (spec/report.md, "Verdicts"). ``failures`` are those that
    count (a ``--known-failing`` entry's are already taken out); ``stale``
    lists known-failing entries that pass now; ``incomplete`` says how much
    of its work a run the time limit stopped did (None: all of it);
    ``unjudged`` gives, each in words, what the run could not judge beyond
    its requirement statuses."""
    if any(counts(f.level, strict) and f.reproduced for f in failures) or stale:
        beside = []
        if errors:
            beside.append(f"{len(errors)} engine error{'s' if len(errors) > 1 else ''} "
                          "listed above")
        if interrupted:
            beside.append("interrupted before the end")
        return Verdict(FAIL, "; ".join(beside))
    if interrupted:
        return Verdict(INTERRUPTED)
    if errors:
        return Verdict(ERROR)
    if incomplete is not None:
        return Verdict(INCOMPLETE, incomplete)
    open_ = unjudged_musts(statuses)
    if open_ or unjudged:
        reasons = list(unjudged)
        if open_:
            shown = ", ".join(f"{s.id} ({_status_word(s.status)}: "
                              f"{s.reason or 'no reason given'})" for s in open_)
            count = len(open_)
            reasons.append(f"{count} MUST{'s' if count > 1 else ''} not judged: {shown}")
        return Verdict(UNJUDGED, "; ".join(reasons))
    return Verdict(PASS)


def judged_strictly(report: Report) -> Report:
    """The report ``--strict`` gives of the same run: strictness changes
    the verdict only, never the engines' work, so one run is judged both
    ways (``policyspec.testing``: a plain and a strict suite class of one
    policy share a check). The failures, statuses and counts are shared."""
    if report.stats.get("strict"):
        return report
    verdict = report.verdict
    strict_stats = {**report.stats, "strict": True}
    if verdict == FAIL:  # a MUST failed: strictness adds nothing, the reason stays
        return replace(report, stats=strict_stats)
    decided = decide(report.requirements, report.failures, strict=True, errors=report.errors,
                     interrupted=verdict == INTERRUPTED,
                     incomplete=report.verdict_reason if verdict == INCOMPLETE else None)
    return replace(report, verdict=decided.name, verdict_reason=decided.reason,
                   stats=strict_stats)


def exit_code(verdict: str, failures: bool) -> int:
    """The process exit code of a verdict (spec/report.md, "Exit codes"):
    0 pass, 1 fail or interrupted, 3 unjudged, 4 incomplete, 2 an error
    without any failure (the check could not run), 1 an error beside SHOULD
    failures."""
    if verdict == PASS:
        return EXIT_CONFORMS
    if verdict == UNJUDGED:
        return EXIT_UNJUDGED
    if verdict == INCOMPLETE:
        return EXIT_INCOMPLETE
    if verdict == ERROR and not failures:
        return EXIT_USAGE  # (a failure not reproduced is no failure here: report.reproduced)
    return EXIT_FAILS


def _status_word(status: str) -> str:
    return "n/a" if status == NA else "not tested"
