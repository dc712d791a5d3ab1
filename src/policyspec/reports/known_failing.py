"""``--known-failing FILE``: requirements a policy is known to break.

One requirement id per line, ``#`` starts a comment. A listed requirement
that fails is reported as an expected failure (``xfail``) and does not fail
the run. A listed requirement that now passes is stale: it fails the run,
naming the line, so the list cannot rot. An id the registry does not know
is a warning.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from policyspec.changelog import Change, history
from policyspec.registry import load_registry
from policyspec.reports.report import FAIL, PASS, XFAIL, Report
from policyspec.reports.verdict import INCOMPLETE, INTERRUPTED, decide

__all__ = ["KnownFailing", "apply_known_failing", "read_known_failing"]


@dataclass(frozen=True)
class KnownFailing:
    requirement: str
    path: str
    line: int


def read_known_failing(path: str) -> tuple[list[KnownFailing], list[str]]:
    """The entries of FILE and warnings for ids the registry does not know.
    Raises OSError when the file cannot be read."""
    text = Path(path).read_text(encoding="utf-8")
    registry = load_registry()
    entries: list[KnownFailing] = []
    warnings: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        requirement = raw.split("#", 1)[0].strip()
        if not requirement:
            continue
        changes = history(requirement)
        if requirement not in registry:
            removed = [c for c in changes if c.kind == "removed"]
            warnings.append(
                f"{path}:{number}: {requirement} was removed in spec {removed[-1].version} "
                f"({removed[-1].reason}); remove the line" if removed
                else f"{path}:{number}: {requirement} matches no requirement"
            )
            continue
        relevelled = [c for c in changes if c.kind == "relevelled"]
        if relevelled:
            warnings.append(f"{path}:{number}: {_relevelled(requirement, relevelled[-1])}")
        entries.append(KnownFailing(requirement, path, number))
    return entries, warnings


def _relevelled(requirement: str, change: Change) -> str:
    effect = (
        "its failure fails the run only with --strict" if change.level == "SHOULD"
        else "its failure now fails the run"
    )
    return (
        f"{requirement} is {change.level} since spec {change.version} (was {change.previous}: "
        f"{change.reason}); {effect}"
    )


def apply_known_failing(report: Report, entries: list[KnownFailing], warnings: list[str]) -> None:
    """Turn listed failures into xfail, stale entries into errors of the run,
    and recompute the verdict."""
    listed = {e.requirement: e for e in entries}
    report.notes.extend(f"warning: {w}" for w in warnings)
    stale: list[str] = []
    for status in report.requirements:
        entry = listed.get(status.id)
        if entry is None:
            continue
        if status.status == FAIL:
            status.status, status.reason = XFAIL, f"known failing ({entry.path}:{entry.line})"
        elif status.status == PASS:
            stale.append(
                f"{entry.path}:{entry.line}: {status.id} is listed as known failing but passes "
                "now; remove the line"
            )
    report.failures = [f for f in report.failures if f.requirement not in listed]
    report.notes.extend(stale)
    failing = {s.id for s in report.requirements if s.status == FAIL}
    verdict = decide(report.requirements,
                     [f for f in report.failures if f.requirement in failing],
                     strict=bool(report.stats.get("strict")), errors=report.errors,
                     interrupted=report.verdict == INTERRUPTED, stale=stale,
                     incomplete=report.verdict_reason if report.verdict == INCOMPLETE else None)
    report.verdict, report.verdict_reason = verdict.name, verdict.reason
    if stale:
        report.stats["stale_known_failing"] = stale
