"""Writing a report in the formats a command was asked for, one function
for every command (``check``, ``report --merge``, ``check-history``,
``replay``): the JSON report, JUnit XML, the HTML page and the markdown
summary, each written atomically (``-`` for the markdown: standard
output); then the exit code of its verdict (``verdict.exit_code``)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from policyspec.reports.report import Report, dumps, write_atomic
from policyspec.reports.verdict import exit_code

__all__ = ["Outputs", "add_report_flags", "outputs_of", "write_reports"]


@dataclass(frozen=True)
class Outputs:
    """Where a command writes its report (None: not asked for)."""

    json: str | None = None
    junit: str | None = None
    html: str | None = None
    markdown: str | None = None


def add_report_flags(parser: argparse.ArgumentParser) -> None:
    """The report flags every command that makes a report takes."""
    parser.add_argument("--json-report", metavar="PATH",
                        help="write the JSON report here (spec/report.md)")
    parser.add_argument("--junit-xml", metavar="PATH", help="write a JUnit XML report here")
    parser.add_argument("--html-report", metavar="PATH",
                        help="write a self-contained HTML page of the run here")
    parser.add_argument("--markdown", metavar="PATH",
                        help="write a short markdown summary here (a CI job page; - for "
                        "standard output)")


def outputs_of(args: argparse.Namespace) -> Outputs:
    """The outputs ``add_report_flags``'s flags ask for."""
    return Outputs(args.json_report, args.junit_xml, args.html_report, args.markdown)


def write_reports(report: Report, outputs: Outputs) -> int:
    """Write ``report`` where ``outputs`` say and return its exit code."""
    if outputs.json:
        write_atomic(outputs.json, dumps(report))
    if outputs.junit:
        write_atomic(outputs.junit, report.to_junit())
    if outputs.html:
        from policyspec.reports.html import write_html_report

        write_html_report(report, outputs.html)
    if outputs.markdown:
        from policyspec.reports.markdown import run_markdown

        text = run_markdown(report)
        if outputs.markdown == "-":
            sys.stdout.write(text)
        else:
            write_atomic(outputs.markdown, text)
    return exit_code(report.verdict, bool(report.failures))
