"""Several runs side by side (``policyspec report``): policies or releases
as columns, requirements as rows, and what changed between two runs of the
same target. The HTML and Markdown renderings both read this.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from policyspec.registry import load_registry
from policyspec.reports.report import FailureReport, Report, RequirementStatus

__all__ = ["Change", "Row", "Run", "changes", "diff_pairs", "label_runs", "matrix_rows"]


@dataclass(frozen=True)
class Run:
    """One report in the matrix."""

    label: str
    report: Report
    source: str = ""
    """The file it was read from."""

    def failure(self, requirement: str) -> FailureReport | None:
        return next((f for f in self.report.failures if f.requirement == requirement), None)


def _short(target: str) -> str:
    """The class part of a target (``pkg.mod:Class`` -> ``Class``)."""
    return target.rsplit(":", 1)[-1] or target


def _where(target: str) -> str:
    """The module or file stem of a target (``a/b/pol.py:C`` -> ``pol``)."""
    place = target.rsplit(":", 1)[0]
    return Path(place).stem if place.endswith(".py") else place.rsplit(".", 1)[-1]


def _more(way: str, label: str, source: str, report: Report) -> str:
    if way == "place":
        return f"{_where(report.target)}:{label}"
    if way == "profile":
        return f"{label} ({report.profile})"
    return f"{label} [{Path(source).stem}]"


def label_runs(reports: Sequence[tuple[str, Report]], labels: Sequence[str] = ()) -> list[Run]:
    """Runs with column labels: the given ones in order, else the target's
    class, with the profile, then the file name, added where two would be
    the same."""
    if labels and len(labels) != len(reports):
        raise ValueError(f"{len(labels)} labels for {len(reports)} reports")
    if labels:
        chosen = list(labels)
    else:
        chosen = [_short(r.target) for _, r in reports]
        for way in ("place", "profile", "file"):  # say more only where two are the same
            chosen = [_more(way, c, source, r) if chosen.count(c) > 1 else c
                      for c, (source, r) in zip(chosen, reports, strict=True)]
    seen: dict[str, int] = {}
    runs = []
    for label, (source, report) in zip(chosen, reports, strict=True):
        seen[label] = seen.get(label, 0) + 1
        unique = label if seen[label] == 1 else f"{label} #{seen[label]}"
        runs.append(Run(unique, report, source))
    return runs


@dataclass(frozen=True)
class Row:
    requirement: str
    level: str
    title: str
    cells: list[RequirementStatus | None]
    """One per run; None where the run's profile lacks the requirement."""

    @property
    def uniform(self) -> bool:
        """Every run has it and they agree on its status."""
        statuses = {c.status if c else None for c in self.cells}
        return len(statuses) == 1 and None not in statuses


def matrix_rows(runs: Sequence[Run]) -> list[Row]:
    """The union of the runs' requirements: core's first, then each
    profile's, in registry order (ids the registry does not know come last,
    in the order met)."""
    registry = load_registry()
    order = {rid: (req.profile != "core", i) for i, (rid, req) in enumerate(registry.items())}
    by_run = [{r.id: r for r in run.report.requirements} for run in runs]
    ids: list[str] = []
    for statuses in by_run:
        ids.extend(rid for rid in statuses if rid not in ids)
    ids.sort(key=lambda rid: order.get(rid, (True, len(order))))
    rows = []
    for rid in ids:
        first = next(s[rid] for s in by_run if rid in s)
        rows.append(Row(rid, first.level, first.title, [s.get(rid) for s in by_run]))
    return rows


@dataclass(frozen=True)
class Change:
    """A requirement whose outcome differs between two runs."""

    requirement: str
    level: str
    title: str
    before: str | None
    after: str | None
    """Statuses; None when the run's profile lacks the requirement."""
    what: str
    before_message: str = ""
    after_message: str = ""


def _what(before: RequirementStatus | None, after: RequirementStatus | None,
          old: FailureReport | None, new: FailureReport | None) -> str | None:
    if before is None:
        return "new in this run's profile"
    if after is None:
        return "no longer in the profile"
    if before.status == after.status:
        if old and new and old.message != new.message:
            return "still fails, differently"
        return None
    if after.status == "fail":
        return "now fails"
    if before.status == "fail":
        return f"no longer fails (now {after.status})"
    return f"was {before.status}, now {after.status}"


def changes(before: Run, after: Run) -> list[Change]:
    """What changed from ``before`` to ``after``, row by row."""
    out = []
    for row in matrix_rows([before, after]):
        old_status, new_status = row.cells
        old, new = before.failure(row.requirement), after.failure(row.requirement)
        what = _what(old_status, new_status, old, new)
        if what is None:
            continue
        out.append(Change(
            row.requirement, row.level, row.title,
            old_status.status if old_status else None,
            new_status.status if new_status else None,
            what, old.message if old else "", new.message if new else "",
        ))
    return out


def diff_pairs(runs: Sequence[Run]) -> list[tuple[int, int]]:
    """Which runs to compare: the two runs when there are two; otherwise each
    run with the previous run of the same target and profile."""
    if len(runs) == 2:
        return [(0, 1)]
    pairs = []
    for index, run in enumerate(runs):
        for earlier in range(index - 1, -1, -1):
            other = runs[earlier].report
            if (other.target, other.profile) == (run.report.target, run.report.profile):
                pairs.append((earlier, index))
                break
    return pairs
