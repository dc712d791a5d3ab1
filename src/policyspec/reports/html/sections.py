"""The parts of a report page: run facts, the requirement table, and a
failure with its timeline and reproducing snippet. The run page and the
matrix page are made of these, so a failure reads the same in both.

``prefix`` keeps element ids unique when one page shows several runs.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from policyspec.registry import load_registry
from policyspec.reports.html.markup import STATUS_WORDS, esc, prose, status_badge
from policyspec.reports.report import FailureReport, Report, repro_line
from policyspec.reports.timeline import (
    ABSENT,
    IDLE_STATE,
    IN_FLIGHT_STATE,
    READ,
    Cell,
    Timeline,
    timeline,
)
from policyspec.spec_text import requirement_text

__all__ = [
    "engines_table",
    "facts_list",
    "failure_anchor",
    "failure_section",
    "notes_section",
    "requirements_table",
    "status_counts",
    "timeline_table",
]

_LETTER = {ABSENT: "·", IN_FLIGHT_STATE: "F", IDLE_STATE: "I", READ: "R"}
_SPLIT = re.compile(
    r"^(?P<got>.*?);\s*(?P<want>(?:the spec|the [\w-]+ profile|only|expected)\b.*)$")


def failure_anchor(prefix: str, failure: FailureReport) -> str:
    """The element id of a failure's section."""
    return f"{prefix}failure-{re.sub(r'[^A-Za-z0-9_-]', '-', failure.requirement)}"


def status_counts(report: Report) -> str:
    """"2 FAIL, 50 PASS, ..." in a fixed order."""
    counts = Counter(r.status for r in report.requirements)
    parts = [f"{counts[s]} {word}" for s, (word, _) in STATUS_WORDS.items() if counts[s]]
    return ", ".join(parts) or "none"


def _number(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return esc(value)
    return f"{value:,}" if isinstance(value, int) else f"{value:,.1f}"


def facts_list(report: Report, *, source: str = "") -> str:
    """The run facts as a description list."""
    s = report.stats
    rows: list[tuple[str, str]] = [
        ("Target", f"<code>{esc(report.target)}</code>"),
        ("Profile", esc(report.profile)),
        ("API revision", f"{esc(report.api)} ({esc(report.emulated)})"),
    ]
    if "cases" in s:
        rows.append(("Cases", f"{_number(s['cases'])} ({_number(s.get('failed', 0))} failed)"))
    else:
        rows += [
            ("Seed", esc(s.get("seed", "?"))),
            ("Checked calls", _number(s.get("calls", 0))),
            ("Steps", _number(s.get("steps", 0))),
            ("Examples", _number(s.get("examples", 0))),
        ]
    rows.append(("Time", f"{float(s.get('seconds', 0.0)):.1f} s"))
    if "capacity" in s:
        rows.append(("Capacity", _number(s["capacity"])))
    if s.get("strict"):
        rows.append(("Strict", "yes: SHOULD failures fail the run"))
    if "shard" in s:
        rows.append(("Shard", esc(s["shard"])))
    if "merged_shards" in s:
        rows.append(("Merged from", f"{len(s['merged_shards'])} shards "
                     f"({esc(', '.join(str(x) for x in s['merged_shards']))})"))
    if "cases" not in s:
        rows.append(("Requirements", esc(status_counts(report))))
    rows.append(("Versions", f"policyspec {esc(report.policyspec_version)}, spec "
                 f"{esc(report.spec_version)}"))
    if source:
        rows.append(("Report file", f"<code>{esc(source)}</code>"))
    body = "".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in rows)
    return f'<dl class="facts">{body}</dl>'


def requirements_table(report: Report, prefix: str = "", *, rows: str = "requirement") -> str:
    """Every requirement (or case) with level, status and checks; failing
    rows link to their failure."""
    anchors = {f.requirement: failure_anchor(prefix, f) for f in report.failures}
    body = []
    for req in report.requirements:
        ident = esc(req.id)
        if req.id in anchors:
            ident = f'<a href="#{anchors[req.id]}">{ident}</a>'
        css = ' class="row-fail"' if req.status == "fail" else ""
        reason = f'<span class="sub">{esc(req.reason)}</span>' if req.reason else ""
        body.append(
            f"<tr{css}><td>{status_badge(req.status)}</td><th scope=\"row\">{ident}</th>"
            f"<td>{esc(req.level)}</td><td>{esc(req.profile)}</td>"
            f'<td class="num">{req.checks:,}</td><td>{prose(req.title)}{reason}</td></tr>'
        )
    word = {"case": "Cases", "obligation": "Obligations"}.get(rows, "Requirements")
    caption = (f"{word} of profile {esc(report.profile)} ({len(report.requirements)}): "
               f"{esc(status_counts(report))}")
    checks = {"case": "Expectations checked", "obligation": "Paths"}.get(rows, "Checks")
    return (
        f'<table class="requirements"><caption>{caption}</caption><thead><tr>'
        f'<th scope="col">Status</th><th scope="col">{word[:-1]}</th><th scope="col">Level</th>'
        f'<th scope="col">Profile</th><th scope="col" class="num">{checks}</th>'
        f'<th scope="col">{"Title" if rows == "requirement" else "Description"}</th></tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def engines_table(report: Report) -> str:
    engines: dict[str, dict[str, Any]] = report.stats.get("engines") or {}
    if not engines:
        return ""
    fixed = ("calls", "steps", "examples", "seconds")
    body = []
    for name, counts in engines.items():
        extra = ", ".join(f"{esc(k)} {_number(v)}" for k, v in counts.items() if k not in fixed)
        cells = "".join(f'<td class="num">{_number(counts.get(k, 0))}</td>' for k in fixed)
        body.append(f'<tr><th scope="row">{esc(name)}</th>{cells}<td>{extra}</td></tr>')
    head = "".join(f'<th scope="col" class="num">{k}</th>' for k in fixed)
    return (f'<table class="engines"><caption>Engines</caption><thead><tr>'
            f'<th scope="col">Engine</th>{head}<th scope="col">Other counts</th></tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table>")


def notes_section(report: Report) -> str:
    parts = []
    if report.errors:
        items = "".join(f"<li>{esc(e)}</li>" for e in report.errors)
        parts.append(f'<h2 id="errors">Errors</h2><ul class="plain">{items}</ul>')
    if report.notes:
        items = "".join(f"<li>{esc(n)}</li>" for n in report.notes)
        parts.append(f'<h2 id="notes">Notes</h2><ul class="plain">{items}</ul>')
    return "".join(parts)


LEGEND = (
    '<ul class="legend" aria-label="Legend of the timeline cells">'
    '<li><span class="swatch c-absent">·</span>absent</li>'
    '<li><span class="swatch c-in-flight">F</span>in flight (ref_cnt −1, store running)</li>'
    '<li><span class="swatch c-idle">I</span>idle (ref_cnt 0, evictable)</li>'
    '<li><span class="swatch c-being-read">R</span>being read (ref_cnt &gt; 0; R2: two loads)</li>'
    '<li><span class="swatch victim"><span class="mark-victim">✕</span></span>'
    "returned as a victim by this step's evict</li>"
    '<li><span class="swatch protected">p</span>in this evict\'s protected set</li>'
    '<li><span class="swatch named">▢</span>named by the step (outlined)</li>'
    '<li><span class="swatch"><span class="mark-victim">✗</span></span>'
    "the failing step (dashed column): keys as that step found them</li>"
    "</ul>"
)


def _cell(cell: Cell, failing: bool) -> str:
    letter = _LETTER[cell.state]
    if cell.state == READ and cell.ref_cnt is not None and cell.ref_cnt > 1:
        letter += str(cell.ref_cnt)
    css = ["c-" + cell.state.replace(" ", "-")]
    words = [cell.state]
    marks = ""
    if cell.protected:
        css.append("protected")
        words.append("protected")
        marks += "<sup>p</sup>"
    if cell.victim:
        css.append("victim")
        words.append("returned as a victim")
        marks += '<span class="mark-victim">✕</span>'
    if cell.named:
        css.append("named")
        words.append("named by the step")
    if failing:
        css.append("failing-step")
    return (f'<td class="{" ".join(css)}"><span aria-hidden="true">{letter}{marks}</span>'
            f'<span class="sr">{esc(", ".join(words))}</span></td>')


def timeline_table(line: Timeline, ident: str, title: str) -> str:
    """Keys by steps: one row per key, one column per step."""
    head = []
    for step in line.steps:
        css = ' class="failing-step"' if step.failing else ""
        mark = '<span aria-hidden="true"> ✗</span><span class="sr"> (failing)</span>' \
            if step.failing else ""
        head.append(f'<th scope="col"{css} title="{esc(step.text)}">'
                    f'<a href="#{ident}-step-{step.number}">{step.number}</a>{mark}</th>')
    rows = []
    for key in line.keys:
        cells = "".join(_cell(step.cells[key], step.failing) for step in line.steps)
        rows.append(f'<tr><th scope="row">key {key}</th>{cells}</tr>')
    caption = "Keys (rows) by steps (columns): each key's state after the step"
    return (
        f'<p class="muted">{caption}.</p>'
        f'<div class="scroll" role="region" tabindex="0" aria-label="Timeline of {esc(title)}">'
        f'<table class="timeline" id="{ident}-timeline"><caption class="sr">Timeline of '
        f"{esc(title)}: {caption}</caption>"
        f'<thead><tr><th scope="col">step</th>{"".join(head)}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>{LEGEND}"
    )


def _steps_list(failure: FailureReport, line: Timeline | None, ident: str) -> str:
    items = []
    for number, text in enumerate(failure.trace, 1):
        step = line.steps[number - 1] if line and number <= len(line.steps) else None
        failing = number == len(failure.trace)
        css = ' class="failing-step"' if failing else ""
        extra = ""
        if step is not None and step.victims and not failing:
            extra = f" → evicted {esc(step.victims)}"
        elif step is not None and failing and step.victims is not None:
            extra = f" → returned {esc(step.victims)}"
        if step is not None and step.note:
            extra += f' <span class="muted">({esc(step.note)})</span>'
        tail = " <strong>← the failing step</strong>" if failing else ""
        items.append(f'<li id="{ident}-step-{number}"{css}>{esc(text)}{extra}{tail}</li>')
    return f'<ol class="steps">{"".join(items)}</ol>'


def failure_section(failure: FailureReport, prefix: str = "", *, heading: str = "h3") -> str:
    """One failure: the requirement's text, what came back, what the spec
    requires, the timeline, the steps and the reproducing snippet."""
    ident = failure_anchor(prefix, failure)
    known = load_registry().get(failure.requirement)
    text = requirement_text(failure.requirement)
    where = (f' <span class="muted">(spec/{esc(known.anchor)})</span>' if known else "")
    match = _SPLIT.match(failure.message)
    got, want = (match["got"], match["want"]) if match else (failure.message, "")
    rows = [
        ("Requirement", (prose(text) if text else prose(failure.title)) + where),
        ("What came back", esc(got)),
        ("What the spec requires", esc(want) if want else (prose(text) if text else "—")),
        ("Found by", f"{esc(failure.engine)}, minimal trace of {len(failure.trace)} steps"
         if failure.trace else esc(failure.engine)),
    ]
    facts = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows)
    line: Timeline | None = None
    drawn = ""
    if failure.actions:
        try:
            line = timeline(failure.actions)
        except ValueError as exc:
            drawn = f'<p class="muted">No timeline: {esc(exc)}.</p>'
        else:
            drawn = timeline_table(line, ident, failure.requirement)
    elif failure.trace:
        drawn = '<p class="muted">No timeline: this report carries the trace as text only.</p>'
    steps = ""
    if failure.trace:
        steps = f"<h4>Steps</h4>{_steps_list(failure, line, ident)}"
    repro = ""
    if failure.repro:
        repro = (
            f"<h4 id=\"{ident}-repro-label\">Reproduce</h4>"
            f'<p><button type="button" class="copy" hidden data-copy="{ident}-repro" '
            f'data-status="{ident}-copy-status" '
            f'aria-label="Copy the reproducing snippet of {esc(failure.requirement)}">Copy</button>'
            f'<span class="copy-status" id="{ident}-copy-status" role="status" '
            f'aria-live="polite"></span></p>'
            f'<p class="repro-shown">{esc(repro_line(failure))}</p>'
            f'<pre id="{ident}-repro" aria-labelledby="{ident}-repro-label"><code>'
            f"{esc(failure.repro)}</code></pre>"
        )
    level = " should" if failure.level == "SHOULD" else ""
    return (
        f'<section class="failure{level}" id="{ident}" aria-labelledby="{ident}-title">'
        f'<{heading} id="{ident}-title">{status_badge("fail")} {esc(failure.requirement)} '
        f"({esc(failure.level)}): {prose(failure.title)}</{heading}>"
        f'<dl class="facts">{facts}</dl>'
        f"{'<h4>Timeline</h4>' + drawn if drawn else ''}{steps}{repro}</section>"
    )
