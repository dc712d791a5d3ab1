"""The page of one run (``--html-report PATH``): verdict and run facts,
each failure with its timeline and snippet, then every requirement.

Any front end that has a ``Report`` writes it with one call:
``write_html_report(report, path)``.
"""

from __future__ import annotations

import os

from policyspec.files import write_atomic
from policyspec.reports.html.markup import document, esc, verdict_badge
from policyspec.reports.html.sections import (
    engines_table,
    facts_list,
    failure_anchor,
    failure_section,
    notes_section,
    requirements_table,
)
from policyspec.reports.report import Report, verdict_caveat

__all__ = ["render_run_page", "write_html_report"]

_HEADINGS = {"case": "Cases", "obligation": "Obligations"}
"""The heading of the table's rows: requirements, a replay's cases, or
``prove``'s obligations (one per operation)."""


def render_run_page(report: Report, *, rows: str = "requirement", source: str = "") -> str:
    """The page as text. ``rows="case"`` titles the table for a replay of
    golden vectors, whose rows are cases, ``rows="obligation"`` for a
    ``prove`` run, whose rows are its obligations; ``source`` names the JSON
    file the report was read from, if any."""
    failures = report.failures
    summary = ""
    if failures:
        links = "".join(
            f'<li><a href="#{failure_anchor("", f)}">{esc(f.requirement)}</a> ({esc(f.level)})'
            f": {esc(f.message)}</li>"
            for f in failures
        )
        summary = f'<ul class="plain" aria-label="Failures">{links}</ul>'
    reason = (f'<p class="verdict-reason">{esc(report.verdict_reason)}</p>'
              if report.verdict_reason else "")
    details = "".join(failure_section(f) for f in failures)
    failed_part = (f'<h2 id="failures">Failures ({len(failures)})</h2>{details}'
                   if failures else "")
    body = (
        f'<header><p class="muted">policyspec report</p>'
        f"<h1>{esc(report.target)}</h1><p>{verdict_badge(report.verdict)}"
        f"{esc(verdict_caveat(report))}</p>{reason}{summary}</header>"
        f'<main><h2 id="run">Run</h2>{facts_list(report, source=source)}'
        f"{failed_part}"
        f'<h2 id="requirements">{_HEADINGS.get(rows, "Requirements")}</h2>'
        f"{requirements_table(report, rows=rows)}"
        f"{engines_table(report)}{notes_section(report)}</main>"
    )
    title = (f"policyspec: {report.verdict.upper()}{verdict_caveat(report)} {report.target} "
             f"({report.profile})")
    return document(title, body)


def write_html_report(
    report: Report, path: str | os.PathLike[str], *, rows: str = "requirement", source: str = ""
) -> None:
    """Write the run page to ``path`` atomically."""
    write_atomic(path, render_run_page(report, rows=rows, source=source))
