"""``policyspec simulate``'s outputs: the table as Markdown, the campaign as
JSON (``simulate.SCHEMA``), JUnit XML, the miss-ratio curves as SVG, and
one HTML page with all of them (self-contained, like the check reports).
Each carries the hit-rate gate when the campaign has a baseline: the
target's hit rate over the baseline's at each size, and with a threshold
a pass or fail per size and for the whole, as check's reports carry a
verdict.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator

from policyspec.reports.html.markup import document, esc
from policyspec.workload.curve import Series, miss_ratio_svg, size_label, stacked_svg
from policyspec.workload.player import SEMANTICS, manager_release
from policyspec.workload.simulate import Campaign, GateRow, gate

__all__ = [
    "campaign_json", "campaign_junit", "campaign_markdown", "campaign_page", "campaign_svg",
    "gate_lines", "table_rows",
]

COLUMNS = (
    ("trace", "trace"), ("size", "cache size (blocks)"), ("policy", "policy"),
    ("hit", "block hit rate"), ("loaded", "blocks loaded"), ("stored", "blocks stored"),
    ("evicted", "blocks evicted"), ("failed", "failed evictions"),
    ("refused", "stores refused"), ("median", "µs per call, median"),
    ("p99", "µs per call, p99"), ("memory", "policy memory"),
)


def _bytes(n: int) -> str:
    for factor, unit in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if n >= factor:
            return f"{n / factor:.1f} {unit}"
    return f"{n} B"


def _micro(ns: int | None) -> str:
    return "" if ns is None else f"{ns / 1000:.2f}"


def table_rows(campaign: Campaign) -> Iterator[dict[str, str]]:
    """The table, one dict of column text per cell, in grid order."""
    names = {t.path: _trace_name(t.path) for t in campaign.traces}
    for cell in sorted(campaign.cells, key=lambda c: c.index):
        times = cell.times.get("call_ns", {})
        yield {
            "trace": names.get(cell.trace, cell.trace),
            "size": f"{cell.capacity:,}",
            "policy": cell.policy,
            "hit": "error" if cell.error else f"{cell.hit_rate:.2%}",
            "loaded": f"{cell.hit_blocks:,}",
            "stored": f"{cell.blocks_stored:,}",
            "evicted": f"{cell.blocks_evicted:,}",
            "failed": f"{cell.failed_evictions:,}",
            "refused": f"{cell.stores_refused:,}",
            "median": _micro(times.get("median")),
            "p99": _micro(times.get("p99")),
            "memory": _bytes(cell.memory_bytes),
        }


def _trace_name(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def _ratio(row: GateRow) -> str:
    return "" if row.ratio is None else f"{row.ratio:.4f}"


def _passed(row: GateRow) -> str:
    return {None: "", True: "pass", False: "FAIL"}[row.passed]


def _target_label(campaign: Campaign) -> str:
    return campaign.policies[0].label if campaign.policies else ""


def gate_lines(campaign: Campaign) -> list[str]:
    """The gate as Markdown: a table, then the verdict (none without a
    baseline)."""
    rows = gate(campaign)
    if campaign.baseline is None:
        return []
    target = _target_label(campaign)
    lines = [f"\nGate: {target} against {campaign.baseline}"
             + (f", failing below {campaign.fail_under:g} x the baseline's hit rate"
                if campaign.fail_under is not None else ""),
             "",
             "| trace | cache size (blocks) | target hit rate | baseline hit rate | ratio | "
             "verdict |",
             "| --- | ---: | ---: | ---: | ---: | --- |"]
    lines += [f"| {_trace_name(row.trace)} | {row.capacity:,} | {row.target_hit_rate:.2%} | "
              f"{row.baseline_hit_rate:.2%} | {_ratio(row)} | {_passed(row)} |" for row in rows]
    verdict = campaign.gate_verdict()
    if verdict is not None:
        failed = [row for row in rows if row.passed is False]
        lines.append(f"\ngate: {verdict.upper()}" + (
            f" ({len(failed)} of {len(rows)} sizes below {campaign.fail_under:g} x "
            f"{campaign.baseline})" if failed else f" ({len(rows)} sizes)"))
    return lines


def campaign_markdown(campaign: Campaign) -> str:
    """The table, a line per cell that stopped on an error, and the gate."""
    lines = ["| " + " | ".join(title for _, title in COLUMNS) + " |",
             "|" + "|".join("---:" if key not in ("trace", "policy") else "---"
                            for key, _ in COLUMNS) + "|"]
    lines += ["| " + " | ".join(row[key] for key, _ in COLUMNS) + " |"
              for row in table_rows(campaign)]
    lines += [f"\n{cell.policy} at {cell.capacity:,} blocks on {_trace_name(cell.trace)} "
              f"stopped: {cell.error}" for cell in campaign.cells if cell.error]
    lines += gate_lines(campaign)
    index, total = campaign.shard
    if total > 1:
        lines.append(f"\nshard {index}/{total}: {len(campaign.cells)} of the grid's cells")
    return "\n".join(lines) + "\n"


def campaign_junit(campaign: Campaign) -> str:
    """JUnit XML: a test case per cell (an error when the policy stopped the
    play) and, with a threshold, one per size of the gate (a failure when
    the target fell below it); the gate's verdict and ratios as
    properties."""
    target = _target_label(campaign)
    suite = ET.Element("testsuite", name=f"policyspec simulate: {target}")
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", name="semantics", value=campaign.semantics)
    if campaign.baseline is not None:
        ET.SubElement(properties, "property", name="baseline", value=campaign.baseline)
    if campaign.fail_under is not None:
        ET.SubElement(properties, "property", name="fail_under", value=f"{campaign.fail_under:g}")
        ET.SubElement(properties, "property", name="verdict",
                      value=(campaign.gate_verdict() or "").upper())
    tests = errors = failures = 0
    for cell in sorted(campaign.cells, key=lambda c: c.index):
        tests += 1
        case = ET.SubElement(suite, "testcase", classname=f"policyspec.simulate.{cell.policy}",
                             name=f"{_trace_name(cell.trace)} at {cell.capacity} blocks")
        ET.SubElement(case, "properties").append(
            ET.Element("property", name="hit_rate", value=f"{cell.hit_rate:.6f}"))
        if cell.error:
            errors += 1
            ET.SubElement(case, "error", message=cell.error)
    for row in gate(campaign):
        if row.passed is None:
            continue
        tests += 1
        case = ET.SubElement(suite, "testcase", classname="policyspec.simulate.gate",
                             name=f"{_trace_name(row.trace)} at {row.capacity} blocks")
        case_properties = ET.SubElement(case, "properties")
        ET.SubElement(case_properties, "property", name="ratio", value=_ratio(row))
        ET.SubElement(case_properties, "property", name="verdict", value=_passed(row).lower())
        if not row.passed:
            failures += 1
            ratio = f"{row.ratio:.4f}" if row.ratio is not None else "none (a cell stopped)"
            ET.SubElement(case, "failure", message=(
                f"{target} hit {row.target_hit_rate:.2%} of blocks, {campaign.baseline} "
                f"{row.baseline_hit_rate:.2%}: ratio {ratio}, under {campaign.fail_under:g}"))
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", "0")
    return ET.tostring(suite, encoding="unicode", xml_declaration=True)


def campaign_json(campaign: Campaign) -> str:
    return json.dumps(campaign.to_json(), indent=2) + "\n"


def _series(campaign: Campaign, trace: str) -> list[Series]:
    out = []
    for policy in campaign.policies:
        cells = sorted((c for c in campaign.cells
                        if c.trace == trace and c.policy == policy.label and not c.error),
                       key=lambda c: c.capacity)
        if cells:
            out.append(Series(policy.label,
                              tuple((c.capacity, round(1 - c.hit_rate, 6)) for c in cells)))
    return out


def _charts(campaign: Campaign) -> list[str]:
    return [miss_ratio_svg(f"Miss-ratio curve: {_trace_name(t.path)}", _series(campaign, t.path),
                           ident=f"curve-{number}")
            for number, t in enumerate(campaign.traces)]


def campaign_svg(campaign: Campaign) -> str:
    """Every trace's curve, one SVG document."""
    return stacked_svg(_charts(campaign))


def campaign_page(campaign: Campaign) -> str:
    """The HTML page: what was played, the curves, the table, how to read it."""
    index, total = campaign.shard
    timing = campaign.timing
    facts = [
        ("traces", "; ".join(f"{_trace_name(t.path)}: {t.requests:,} requests, "
                             f"{t.blocks:,} blocks (sha256 {t.sha256[:12]})"
                             for t in campaign.traces)),
        ("policies", "; ".join(f"{p.label} = {p.target} ({p.api}, vLLM "
                               f"{manager_release(p.api)}'s manager)"
                               for p in campaign.policies)),
        ("cache sizes", ", ".join(f"{c:,}" for c in campaign.capacities)),
        ("manager", _manager_fact(campaign)),
        ("timing", f"prefill {timing.prefill_tokens_per_ms:g} tokens/ms, decode "
                   f"{timing.decode_ms_per_token:g} ms/token, transfer "
                   f"{timing.transfer_ms_per_block:g} ms/block, {timing.max_running} running "
                   "at most"),
    ]
    if total > 1:
        facts.append(("shard", f"{index}/{total} ({len(campaign.cells)} cells)"))
    facts_html = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts)
    charts = "".join(f'<figure class="curve">{chart}</figure>' for chart in _charts(campaign))
    head = "".join(f'<th scope="col"{_num(key)}>{esc(title)}</th>' for key, title in COLUMNS)
    body = []
    for row in table_rows(campaign):
        cells = []
        for key, _ in COLUMNS:
            if key == "policy":
                cells.append(f'<th scope="row" class="policy">{esc(row[key])}</th>')
            else:
                cells.append(f"<td{_num(key)}>{esc(row[key])}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    errors = "".join(f"<li>{esc(c.policy)} at {c.capacity:,} blocks: {esc(c.error)}</li>"
                     for c in campaign.cells if c.error)
    gate_html = _gate_html(campaign)
    hits = ("every block found, each block a request of its own (--semantics plain)"
            if campaign.semantics == "plain" else "the hit prefix of each request, up to its "
            "first miss")
    target = next((p.target for p in campaign.policies if not p.label.startswith("reference")),
                  campaign.policies[0].target if campaign.policies else "")
    page = (
        f"<h1>policyspec simulate: {esc(target)}</h1>"
        f'<dl class="facts">{facts_html}</dl>'
        + gate_html +
        "<h2>Miss-ratio curves</h2>" + charts +
        "<h2>Per cache size</h2>"
        '<div class="scroll"><table class="simulate">'
        f"<caption>Each policy at each cache size: blocks loaded are {hits}, read back from "
        "the CPU tier</caption>"
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
        + (f"<h2>Stopped</h2><ul class=\"plain\">{errors}</ul>" if errors else "") +
        "<h2>How to read it</h2><ul class=\"plain\">"
        "<li>The block hit rate is the share of the blocks the requests named that were "
        f"loaded from the CPU tier ({hits}). Everything "
        "but the times is the same on every run of the same trace and options.</li>"
        "<li>Failed evictions are <code>evict</code> calls the policy answered with None; "
        "stores refused are <code>prepare_store</code> calls the manager answered with None "
        "(the policy's refusal, or too few idle blocks, when evict is not even called).</li>"
        "<li>Times are each policy call's, measured by <code>perf_counter</code> around "
        "it; they vary with the machine and its load. Memory is the size of the objects "
        "the policy holds at the end, without the keys, chunks and request contexts the "
        "manager hands it.</li>"
        f"<li>Sizes: {', '.join(size_label(c) for c in campaign.capacities)} blocks of 512 "
        "tokens.</li></ul>"
    )
    style = "<style>table.simulate th.policy { white-space: nowrap; }</style>"
    return document(f"policyspec simulate: {target}", style + page)


def _manager_fact(campaign: Campaign) -> str:
    """The release (or releases) whose manager played the policies, and how
    much of it (``--semantics``)."""
    releases = sorted({manager_release(p.api) for p in campaign.policies})
    text = (" and ".join(f"vLLM {r}'s" for r in releases) or "vLLM 0.33.0's") + (
        " CPUOffloadingManager (emulated)")
    if campaign.semantics == "vllm":
        return f"{text}, store threshold {campaign.store_threshold}"
    return f"{text}, semantics {campaign.semantics}: {SEMANTICS[campaign.semantics]}"


def _gate_html(campaign: Campaign) -> str:
    if campaign.baseline is None:
        return ""
    rows = gate(campaign)
    verdict = campaign.gate_verdict()
    target = _target_label(campaign)
    rule = (f"fails at a size where its hit rate is below {campaign.fail_under:g} times "
            f"{campaign.baseline}'s" if campaign.fail_under is not None
            else "no threshold (--fail-under): ratios only")
    body = "".join(
        f'<tr class="{_passed(row).lower() or "none"}"><td>{esc(_trace_name(row.trace))}</td>'
        f'<td class="num">{row.capacity:,}</td><td class="num">{row.target_hit_rate:.2%}</td>'
        f'<td class="num">{row.baseline_hit_rate:.2%}</td><td class="num">{_ratio(row)}</td>'
        f"<td>{esc(_passed(row))}</td></tr>" for row in rows)
    head = (f'<p class="verdict gate-{verdict}">Gate: <strong>{verdict.upper()}</strong></p>'
            if verdict is not None else "")
    return (
        f'<section id="gate"><h2>Hit-rate gate</h2>{head}'
        f"<p>{esc(target)} against {esc(campaign.baseline)}: {esc(rule)}.</p>"
        '<table class="gate"><thead><tr><th scope="col">trace</th>'
        '<th scope="col" class="num">cache size (blocks)</th>'
        '<th scope="col" class="num">target hit rate</th>'
        '<th scope="col" class="num">baseline hit rate</th>'
        '<th scope="col" class="num">ratio</th><th scope="col">verdict</th></tr></thead>'
        f"<tbody>{body}</tbody></table></section>"
    )


def _num(key: str) -> str:
    return "" if key in ("trace", "policy") else ' class="num"'
