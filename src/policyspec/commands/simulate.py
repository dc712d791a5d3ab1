"""``policyspec simulate TARGET --trace FILE``: a serving trace through the
target and the in-tree LRU and ARC of its revision, at several cache sizes
(spec/traffic.md, "Simulate"). ``--merge`` puts shards back together;
``--semantics`` plays less of the manager, to compare with a plain cache
simulator; ``--baseline`` and ``--fail-under`` make it a hit-rate gate."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from policyspec.exits import EXIT_CONFORMS, EXIT_FAILS, UsageError

__all__ = ["SAMPLE_SIZES", "TRACE_SIZES", "add_parser", "ratio"]

SAMPLE_SIZES = (256, 1024, 4096)
"""Default sizes for the bundled sample (2,703 distinct blocks): heavy
pressure, some, and none (the floor of compulsory misses)."""
TRACE_SIZES = (10_000, 100_000, 1_000_000)
"""Default sizes for a user's trace: what deployments use."""


def ratio(text: str) -> float:
    """A ``--fail-under`` value: a finite number above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number above 0, got {text!r}")
    return value


def add_parser(sub: Any) -> None:
    from policyspec.commands.check import _shard, positive_int
    from policyspec.releases import RELEASES
    from policyspec.workload.player import SEMANTICS

    parser = sub.add_parser(
        "simulate",
        help="play a serving trace through a policy and the in-tree LRU and ARC",
        description="Play a serving trace (Mooncake JSONL or policyspec's own format, "
        "spec/traffic.md) through TARGET (pkg.module:Class or path/to/file.py:Class) and the "
        "in-tree LRU and ARC of its revision, at each cache size, each policy driven by the "
        "emulated CPUOffloadingManager of the vLLM release of its API revision: "
        + "".join(f"vLLM {r.version}'s for an {r.revision} policy, " for r in RELEASES[:0:-1])
        + f"vLLM {RELEASES[0].version}'s for earlier revisions. Report the block hit rate, blocks "
        "loaded, stored and evicted, failed evictions, the time per policy call and the "
        "policy's memory, with a miss-ratio curve. Exit codes: 0 done (and the gate "
        "passed); 1 a policy stopped the play (raised, or broke the manager's checks: run "
        "policyspec check), or with --fail-under the target's hit rate fell below X times "
        "the baseline's at some size; 2 bad arguments, a target that does not load, or a "
        "bad trace line.",
    )
    parser.add_argument("target", nargs="?", help="pkg.module:Class or path/to/file.py:Class "
                        "(omitted: the in-tree policies alone; with --merge: none)")
    parser.add_argument("--trace", action="append", metavar="FILE", dest="traces",
                        help="a trace to play (repeatable; default: the bundled synthetic "
                        "sample); .gz files are read through gzip")
    parser.add_argument("--capacity", action="append", type=positive_int, metavar="N",
                        dest="capacities",
                        help="a cache size in blocks (repeatable; default "
                        f"{', '.join(f'{n:,}' for n in TRACE_SIZES)}, or "
                        f"{', '.join(f'{n:,}' for n in SAMPLE_SIZES)} for the sample)")
    parser.add_argument("--requests", type=positive_int, metavar="N",
                        help="play only the first N requests of each trace (the whole file "
                        "is still checked)")
    parser.add_argument("--store-threshold", type=positive_int, default=1, metavar="N",
                        help="the manager's store threshold: a block is stored at its N-th "
                        "offer (default 1: off, as in vLLM)")
    parser.add_argument("--semantics", choices=tuple(SEMANTICS), default="vllm",
                        help="how much of the manager plays the trace: vllm (default) all of "
                        "it; plain every block a lookup, a miss inserts it, one eviction per "
                        "insert, nothing in flight (a plain cache simulator's numbers); "
                        "requests and batches the steps between (spec/traffic.md)")
    parser.add_argument("--baseline", metavar="OTHER",
                        help="a policy to gate TARGET on (pkg.module:Class or "
                        "path/to/file.py:Class), played beside it; the reports give "
                        "TARGET's hit rate over OTHER's at each size")
    parser.add_argument("--fail-under", type=ratio, metavar="X",
                        help="with --baseline: exit 1 when TARGET's hit rate is below X times "
                        "OTHER's at any trace and size (1.0: never worse; 0.95: within 5%%)")
    parser.add_argument("--json-report", metavar="PATH", help="write the campaign as JSON")
    parser.add_argument("--junit-xml", metavar="PATH",
                        help="write a JUnit XML report (a test case per cell, and per size "
                        "of the gate)")
    parser.add_argument("--html-report", metavar="PATH",
                        help="write a self-contained HTML page (curves and table)")
    parser.add_argument("--svg", metavar="PATH", help="write the miss-ratio curves as SVG")
    parser.add_argument("--markdown", metavar="PATH",
                        help="write the table as Markdown ('-': stdout, which has it anyway)")
    parser.add_argument("--shard", type=_shard, default=(1, 1), metavar="K/N",
                        help="run the K-th of N parts of the grid (traces x sizes x policies)")
    parser.add_argument("--jobs", "-j", type=positive_int, default=1, metavar="N",
                        help="cells played at once, in worker processes (default 1)")
    parser.add_argument("--merge", nargs="+", metavar="REPORT.json",
                        help="merge the JSON reports of the shards 1..N of one campaign")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    parser.set_defaults(handler=run)


def _campaign(args: argparse.Namespace) -> Any:
    from policyspec.adapters import TargetError
    from policyspec.workload.player import Timing
    from policyspec.workload.reader import TraceFormatError
    from policyspec.workload.sample import sample_path
    from policyspec.workload.simulate import Campaign, describe_trace, gated_policies

    if args.requests == 0:
        raise UsageError("--requests must be at least 1")
    if args.jobs == 0:
        raise UsageError("--jobs must be at least 1")
    if any(c < 1 for c in args.capacities or ()):
        raise UsageError("--capacity must be at least 1")
    if args.store_threshold < 1:
        raise UsageError("--store-threshold must be at least 1")
    if args.store_threshold > 1 and args.semantics != "vllm":
        raise UsageError("--store-threshold is the manager's: it goes with --semantics vllm")
    if args.baseline is not None and args.target is None:
        raise UsageError("--baseline needs a TARGET to compare with it")
    if args.fail_under is not None and args.baseline is None:
        raise UsageError("--fail-under needs --baseline OTHER (the policy to compare with)")
    try:
        chosen, baseline = gated_policies(args.target, args.baseline)
    except TargetError as exc:
        raise UsageError(str(exc)) from None
    paths = args.traces or [str(sample_path())]
    traces = []
    for path in paths:
        try:
            traces.append(describe_trace(path, args.requests))
        except TraceFormatError as exc:
            raise UsageError(str(exc)) from None
        except OSError as exc:
            raise UsageError(f"--trace: cannot read {path}: {exc.strerror or exc}") from None
    sizes = args.capacities or list(SAMPLE_SIZES if not args.traces else TRACE_SIZES)
    campaign = Campaign(traces, sorted(set(sizes)), [p for p, _ in chosen], Timing(),
                        args.store_threshold, args.requests, args.shard, [],
                        semantics=args.semantics, baseline=baseline, fail_under=args.fail_under)
    return campaign, {p.label: subject for p, subject in chosen}


def run(args: argparse.Namespace) -> int:
    from policyspec.files import write_atomic
    from policyspec.workload.simulate import Cell, merge, read_campaign, run_cells
    from policyspec.workload.simulate_report import (
        campaign_json,
        campaign_junit,
        campaign_markdown,
        campaign_page,
        campaign_svg,
    )

    def say(cell: Cell) -> None:
        if not args.quiet:
            what = cell.error or f"hit rate {cell.hit_rate:.2%}"
            print(f"[policyspec] {cell.policy} at {cell.capacity:,} blocks: {what}",
                  file=sys.stderr, flush=True)

    if args.merge:
        if (args.target or args.traces or args.capacities or args.shard != (1, 1)
                or args.baseline or args.fail_under is not None or args.semantics != "vllm"):
            raise UsageError("--merge takes only the shards' reports and the output options")
        try:
            campaign = merge([(path, read_campaign(path)) for path in args.merge])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"--merge: {exc}") from None
    else:
        campaign, subjects = _campaign(args)
        run_cells(campaign, subjects, jobs=args.jobs, progress=say)
    markdown = campaign_markdown(campaign)
    if args.json_report:
        write_atomic(args.json_report, campaign_json(campaign))
    if args.junit_xml:
        write_atomic(args.junit_xml, campaign_junit(campaign))
    if args.html_report:
        write_atomic(args.html_report, campaign_page(campaign))
    if args.svg:
        write_atomic(args.svg, campaign_svg(campaign))
    if args.markdown and args.markdown != "-":
        write_atomic(args.markdown, markdown)
    sys.stdout.write(markdown)
    if any(cell.error for cell in campaign.cells) or campaign.gate_verdict() == "fail":
        return EXIT_FAILS
    return EXIT_CONFORMS
