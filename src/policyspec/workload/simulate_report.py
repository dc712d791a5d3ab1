"""``policyspec simulate``'s outputs: the table as Markdown, the campaign as
JSON (``simulate.SCHEMA``), the miss-ratio curves as SVG, and one HTML page
with all of them (self-contained, like the check reports).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from policyspec.reports.html.markup import document, esc
from policyspec.workload.curve import Series, miss_ratio_svg, size_label, stacked_svg
from policyspec.workload.simulate import Campaign

__all__ = ["campaign_json", "campaign_markdown", "campaign_page", "campaign_svg", "table_rows"]

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


def campaign_markdown(campaign: Campaign) -> str:
    """The table, and a line per cell that stopped on an error."""
    lines = ["| " + " | ".join(title for _, title in COLUMNS) + " |",
             "|" + "|".join("---:" if key not in ("trace", "policy") else "---"
                            for key, _ in COLUMNS) + "|"]
    lines += ["| " + " | ".join(row[key] for key, _ in COLUMNS) + " |"
              for row in table_rows(campaign)]
    lines += [f"\n{cell.policy} at {cell.capacity:,} blocks on {_trace_name(cell.trace)} "
              f"stopped: {cell.error}" for cell in campaign.cells if cell.error]
    index, total = campaign.shard
    if total > 1:
        lines.append(f"\nshard {index}/{total}: {len(campaign.cells)} of the grid's cells")
    return "\n".join(lines) + "\n"


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
        ("policies", "; ".join(f"{p.label} = {p.target} ({p.api})" for p in campaign.policies)),
        ("cache sizes", ", ".join(f"{c:,}" for c in campaign.capacities)),
        ("manager", "vLLM 0.33.0's CPUOffloadingManager (emulated), store threshold "
                    f"{campaign.store_threshold}"),
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
    target = next((p.target for p in campaign.policies if not p.label.startswith("reference")),
                  campaign.policies[0].target if campaign.policies else "")
    page = (
        f"<h1>policyspec simulate: {esc(target)}</h1>"
        f'<dl class="facts">{facts_html}</dl>'
        "<h2>Miss-ratio curves</h2>" + charts +
        "<h2>Per cache size</h2>"
        '<div class="scroll"><table class="simulate">'
        "<caption>Each policy at each cache size: blocks loaded are the hit prefix of each "
        "request, read back from the CPU tier</caption>"
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
        + (f"<h2>Stopped</h2><ul class=\"plain\">{errors}</ul>" if errors else "") +
        "<h2>How to read it</h2><ul class=\"plain\">"
        "<li>The block hit rate is the share of the blocks the requests named that were "
        "loaded from the CPU tier (each request's prefix, up to its first miss). Everything "
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


def _num(key: str) -> str:
    return "" if key in ("trace", "policy") else ' class="num"'
