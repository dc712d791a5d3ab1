"""``policyspec report REPORT.json...``: pages people read from the JSON
reports of several runs (a matrix, what changed), and ``--merge``: one
report and one exit code from the shards of one campaign."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from policyspec.exits import EXIT_CONFORMS, EXIT_USAGE, UsageError

__all__ = ["add_parser"]


def add_parser(sub: Any) -> None:
    from policyspec.releases import releases_text

    parser = sub.add_parser(
        "report",
        help="matrix and diff pages from JSON reports; merge shards into one verdict",
        description="Read JSON reports (--json-report of check). Without --merge: a matrix of "
        "the runs (columns) against requirements (rows) and what changed between runs of one "
        "target, as HTML (--html) or Markdown (--markdown). With --merge: "
        "the reports are the shards 1..N of one campaign (check --shard K/N); they are "
        "combined into one report. Each run's line names the vLLM release it emulated "
        f"({releases_text()}).",
    )
    parser.add_argument("reports", nargs="+", metavar="REPORT.json", help="JSON reports")
    parser.add_argument("--merge", action="store_true",
                        help="the reports are the shards of one campaign: merge them")
    parser.add_argument("--html", metavar="PATH",
                        help="write the HTML page here (the matrix; with --merge, the merged "
                        "run's page)")
    parser.add_argument("--markdown", metavar="PATH",
                        help="write a Markdown summary here ('-' for stdout), e.g. "
                        "$GITHUB_STEP_SUMMARY")
    parser.add_argument("--label", action="append", default=[], metavar="NAME",
                        help="column label of each report, in order (repeat once per report)")
    parser.add_argument("--json-report", metavar="PATH", help="with --merge: the merged JSON")
    parser.add_argument("--junit-xml", metavar="PATH", help="with --merge: the merged JUnit XML")
    parser.add_argument("--known-failing", metavar="FILE",
                        help="with --merge: requirement ids known to fail, applied to the "
                        "merged report (as check --known-failing)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    parser.set_defaults(handler=run)


def _write_markdown(path: str, text: str) -> None:
    from policyspec.files import write_atomic

    if path == "-":
        sys.stdout.write(text)
    else:
        write_atomic(path, text)


def run(args: argparse.Namespace) -> int:
    from policyspec.reports.report import ReportError, load_report

    if not args.merge and (args.json_report or args.junit_xml or args.known_failing):
        raise UsageError("--json-report, --junit-xml and --known-failing go with --merge")
    if args.merge and args.label:
        raise UsageError("--label names matrix columns; --merge makes one report")
    try:
        loaded = [(path, load_report(path)) for path in args.reports]
    except ReportError as exc:
        raise UsageError(str(exc)) from None
    if args.merge:
        return _merge(args, loaded)
    return _matrix(args, loaded)


def _matrix(args: argparse.Namespace, loaded: list[tuple[str, Any]]) -> int:
    from policyspec.reports.markdown import matrix_markdown
    from policyspec.reports.matrix import label_runs

    try:
        runs = label_runs(loaded, args.label)
    except ValueError as exc:
        raise UsageError(f"--label: {exc}") from None
    if args.html:
        from policyspec.reports.html import write_matrix_html

        write_matrix_html(runs, args.html)
    text = matrix_markdown(runs)
    if args.markdown:
        _write_markdown(args.markdown, text)
    if not args.quiet and args.markdown != "-":
        for run in runs:
            failing = ", ".join(f.requirement for f in run.report.failures) or "none failing"
            print(f"{run.label}: {run.report.verdict.upper()} ({failing}); API "
                  f"{run.report.api} ({run.report.emulated})")
        if args.html:
            print(f"matrix of {len(runs)} runs written to {args.html}")
    return EXIT_CONFORMS


def _merge(args: argparse.Namespace, loaded: list[tuple[str, Any]]) -> int:
    from policyspec.reports.merge import MergeError, merge_reports
    from policyspec.reports.write import write_reports

    try:
        report = merge_reports([r for _, r in loaded], [p for p, _ in loaded])
    except MergeError as exc:
        print(f"policyspec: error: cannot merge: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.known_failing:
        from policyspec.reports.known_failing import apply_known_failing, read_known_failing

        try:
            apply_known_failing(report, *read_known_failing(args.known_failing))
        except OSError as exc:
            raise UsageError(f"--known-failing: cannot read {args.known_failing}: "
                             f"{exc.strerror or exc}") from None
    # (report's --html is the page of the merged run here, a matrix otherwise)
    outputs = {name: path for name, path in (
        ("json", args.json_report), ("junit", args.junit_xml), ("html", args.html),
        ("markdown", args.markdown)) if path}
    if not args.quiet and args.markdown != "-":
        sys.stdout.write(report.to_text())
    return write_reports(report, outputs)
