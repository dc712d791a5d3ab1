"""Markdown summaries for CI job pages (GitHub's ``$GITHUB_STEP_SUMMARY``):
one run (``run_markdown``) or a matrix of runs (``matrix_markdown``).
Short by design: what failed and what changed first, the rest folded in
``<details>``; the HTML page has the timelines."""

from __future__ import annotations

from collections.abc import Sequence

from policyspec.reports.html.markup import STATUS_WORDS
from policyspec.reports.html.sections import status_counts
from policyspec.reports.matrix import Run, changes, diff_pairs, matrix_rows
from policyspec.reports.report import FailureReport, Report, repro_line

__all__ = ["matrix_markdown", "run_markdown"]


def _cell(text: object) -> str:
    """Text safe inside a Markdown table cell."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _status(status: str | None) -> str:
    if status is None:
        return "—"
    word, symbol = STATUS_WORDS.get(status, (status.upper(), ""))
    return f"{symbol} {word}".strip()


def _table(head: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(_cell(h) for h in head) + " |",
             "| " + " | ".join("---" for _ in head) + " |"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def run_markdown(report: Report) -> str:
    """One run: verdict, facts, failing requirements, the first failure's
    steps and snippet."""
    s = report.stats
    lines = [
        f"## policyspec: {report.verdict.upper()} `{report.target}` ({report.profile})",
        "",
        f"API {report.api} ({report.emulated}), seed {s.get('seed')}, "
        f"{s.get('calls', 0):,} checked calls, "
        f"{float(s.get('seconds', 0.0)):.1f} s"
        + (f", merged from {len(s['merged_shards'])} shards" if "merged_shards" in s else "")
        + f". Requirements: {status_counts(report)}.",
        "",
    ]
    if report.verdict_reason:
        lines += [f"Verdict {report.verdict.upper()}: {report.verdict_reason}", ""]
    if report.failures:
        lines += _table(
            ("requirement", "level", "what came back", "steps", "found by", "snippet"),
            [(f.requirement, f.level, f.message, len(f.trace), f.engine, _shown(f))
             for f in report.failures],
        )
        first = report.failures[0]
        shown = "minimal trace and snippet" if first.trace else "a measurement: its snippet"
        lines += ["", f"<details><summary>{first.requirement}: {shown}</summary>", "",
                  *[f"{i}. {step}" for i, step in enumerate(first.trace, 1)],
                  "", repro_line(first) + ".",
                  "", "```python", first.repro.rstrip(), "```", "", "</details>"]
    for error in report.errors:
        lines.append(f"- error: {error}")
    return "\n".join(lines) + "\n"


def _shown(failure: FailureReport) -> str:
    """The table's word on the snippet: shown to fail, not shown, not run."""
    if not failure.reproduced:
        return "NOT reproduced"
    if failure.repro_shown is None:
        return "not run"
    return "shown to fail" if failure.repro_shown else "NOT shown to fail"


def matrix_markdown(runs: Sequence[Run]) -> str:
    """Runs, the requirements that do not pass everywhere, what changed,
    and the whole matrix folded."""
    labels = [run.label for run in runs]
    lines = [f"## policyspec: {len(runs)} runs", ""]
    lines += _table(
        ("run", "target", "profile", "verdict", "failing"),
        [(run.label, f"`{run.report.target}`", run.report.profile, run.report.verdict.upper(),
          ", ".join(f.requirement for f in run.report.failures) or "none") for run in runs],
    )
    rows = matrix_rows(runs)
    # a row absent from a run's profile is no failure of that run
    differing = [r for r in rows if any(c is not None and c.status != "pass" for c in r.cells)]
    lines += ["", f"### Requirements that do not pass in every run that has them "
              f"({len(differing)} of {len(rows)})", ""]
    if differing:
        lines += _table(("requirement", "level", *labels),
                        [(r.requirement, r.level,
                          *[_status(c.status if c else None) for c in r.cells])
                         for r in differing])
    else:
        lines.append("None: every requirement passes in every run.")
    for a, b in diff_pairs(runs):
        found = changes(runs[a], runs[b])
        lines += ["", f"### What changed from {runs[a].label} to {runs[b].label}", ""]
        if not found:
            lines.append("Nothing.")
            continue
        lines += _table(("requirement", runs[a].label, runs[b].label, "what changed"),
                        [(c.requirement, _status(c.before), _status(c.after),
                          c.what + (f": {c.after_message or c.before_message}"
                                    if c.after_message or c.before_message else ""))
                         for c in found])
    lines += ["", "<details><summary>The whole matrix</summary>", ""]
    lines += _table(("requirement", "level", *labels),
                    [(r.requirement, r.level, *[_status(c.status if c else None) for c in r.cells])
                     for r in rows])
    lines += ["", "</details>"]
    return "\n".join(lines) + "\n"
