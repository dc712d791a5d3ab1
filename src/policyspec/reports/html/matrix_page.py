"""The matrix page (``policyspec report ... --html PATH``): runs as
columns, requirements as rows, each failing cell linking to its failure
further down the same page; then what changed between runs of one target.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from policyspec.files import write_atomic
from policyspec.reports.html.markup import document, esc, prose, status_badge, verdict_badge
from policyspec.reports.html.sections import (
    facts_list,
    failure_anchor,
    failure_section,
    status_counts,
)
from policyspec.reports.matrix import Change, Run, changes, diff_pairs, matrix_rows

__all__ = ["render_matrix_page", "write_matrix_html"]


def _prefix(index: int) -> str:
    return f"run{index + 1}-"


def _matrix_table(runs: Sequence[Run]) -> str:
    head = "".join(
        f'<th scope="col"><a href="#{_prefix(i)}run">{esc(run.label)}</a>'
        f'<span class="sub">{esc(run.report.profile)} · {esc(run.report.verdict.upper())}'
        f"</span></th>"
        for i, run in enumerate(runs)
    )
    body = []
    for row in matrix_rows(runs):
        cells = []
        for i, (run, cell) in enumerate(zip(runs, row.cells, strict=True)):
            if cell is None:
                cells.append('<td><span aria-hidden="true">—</span>'
                             '<span class="sr">not in this profile</span></td>')
                continue
            badge = status_badge(cell.status)
            failure = run.failure(row.requirement)
            if failure is not None:
                badge = (f'<a href="#{failure_anchor(_prefix(i), failure)}" '
                         f'aria-label="{esc(row.requirement)} fails in {esc(run.label)}: '
                         f'see the failure">{badge}</a>')
            cells.append(f'<td title="{cell.checks:,} checks">{badge}</td>')
        css = "" if row.uniform else ' class="differs"'
        body.append(f'<tr{css}><th scope="row">{esc(row.requirement)}'
                    f'<span class="sub">{esc(row.level)} · {prose(row.title)}</span></th>'
                    f"{''.join(cells)}</tr>")
    caption = (f"Conformance matrix: {len(runs)} runs (columns) against "
               f"{len(body)} requirements (rows)")
    return (f'<div class="scroll" role="region" tabindex="0" aria-label="Conformance matrix">'
            f'<table class="matrix"><caption>{caption}</caption><thead><tr>'
            f'<th scope="col">Requirement</th>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


def _runs_table(runs: Sequence[Run]) -> str:
    body = []
    for i, run in enumerate(runs):
        r = run.report
        failing = ", ".join(f.requirement for f in r.failures) or "none"
        body.append(
            f'<tr><th scope="row"><a href="#{_prefix(i)}run">{esc(run.label)}</a></th>'
            f"<td><code>{esc(r.target)}</code></td><td>{esc(r.profile)}</td>"
            f"<td>{verdict_badge(r.verdict, meaning=False)}</td>"
            f"<td>{esc(failing)}</td><td>{esc(r.policyspec_version)} / {esc(r.spec_version)}"
            f"</td><td><code>{esc(run.source)}</code></td></tr>"
        )
    return ('<table class="runs"><caption>Runs</caption><thead><tr>'
            '<th scope="col">Run</th><th scope="col">Target</th><th scope="col">Profile</th>'
            '<th scope="col">Verdict</th><th scope="col">Failing requirements</th>'
            '<th scope="col">policyspec / spec</th><th scope="col">Report file</th></tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table>")


def _status(status: str | None) -> str:
    if status is None:
        return '<span aria-hidden="true">—</span><span class="sr">not in the profile</span>'
    return status_badge(status)


def _changes_table(before: Run, after: Run, found: list[Change], ident: str) -> str:
    title = f"What changed from {esc(before.label)} to {esc(after.label)}"
    if not found:
        return (f'<h3 id="{ident}">{title}</h3><p>Nothing: every requirement has the same '
                "status, and failures the same message.</p>")
    body = []
    for change in found:
        messages = "".join(
            f'<span class="sub">{label}: {esc(message)}</span>'
            for label, message in (("before", change.before_message),
                                   ("after", change.after_message)) if message
        )
        body.append(
            f'<tr><th scope="row">{esc(change.requirement)}<span class="sub">'
            f"{esc(change.level)} · {prose(change.title)}</span></th>"
            f"<td>{_status(change.before)}</td><td>{_status(change.after)}</td>"
            f"<td>{esc(change.what)}{messages}</td></tr>"
        )
    return (
        f'<h3 id="{ident}">{title}</h3>'
        f'<table class="changes"><caption>{len(found)} requirement'
        f"{'s' if len(found) != 1 else ''} changed</caption><thead><tr>"
        f'<th scope="col">Requirement</th><th scope="col">{esc(before.label)}</th>'
        f'<th scope="col">{esc(after.label)}</th><th scope="col">What changed</th></tr>'
        f"</thead><tbody>{''.join(body)}</tbody></table>"
    )


def _run_section(index: int, run: Run) -> str:
    prefix = _prefix(index)
    report = run.report
    failures = "".join(failure_section(f, prefix, heading="h4") for f in report.failures)
    return (
        f'<section id="{prefix}run" aria-labelledby="{prefix}run-title">'
        f'<h3 id="{prefix}run-title">{esc(run.label)}: {verdict_badge(report.verdict)}</h3>'
        f"{facts_list(report, source=run.source)}"
        f"{failures or '<p>No failure.</p>'}</section>"
    )


def render_matrix_page(runs: Sequence[Run]) -> str:
    """The page as text."""
    if not runs:
        raise ValueError("no run to show")
    pairs = diff_pairs(runs)
    diffs = "".join(
        _changes_table(runs[a], runs[b], changes(runs[a], runs[b]), f"changes-{a + 1}-{b + 1}")
        for a, b in pairs
    )
    changed = f'<h2 id="changes">What changed</h2>{diffs}' if pairs else ""
    counts = "; ".join(f"{run.label}: {status_counts(run.report)}" for run in runs)
    body = (
        f'<header><p class="muted">policyspec report</p>'
        f"<h1>Conformance of {len(runs)} run{'s' if len(runs) != 1 else ''}</h1>"
        f"<p>{esc(counts)}</p></header>"
        f'<main><h2 id="matrix">Matrix</h2>{_matrix_table(runs)}'
        f"{_runs_table(runs)}{changed}"
        f'<h2 id="details">Runs and their failures</h2>'
        f"{''.join(_run_section(i, run) for i, run in enumerate(runs))}</main>"
    )
    return document(f"policyspec: conformance of {len(runs)} runs", body)


def write_matrix_html(runs: Sequence[Run], path: str | os.PathLike[str]) -> None:
    """Write the matrix page to ``path`` atomically."""
    write_atomic(path, render_matrix_page(runs))
