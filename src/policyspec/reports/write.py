"""Writing a report in the formats a command was asked for, one function
for every command (``check``, ``check-history``, ``report --merge``): each
format is a ``Format`` in ``FORMATS`` (the JSON report, JUnit XML, the HTML
page, the markdown summary), a flag and a function from a ``Report`` to
text; ``add_report_flags`` gives a command every format's flag, and
``write_reports`` writes each one asked for atomically (``-``: standard
output), then returns the exit code of the verdict (``verdict.exit_code``).
A new format is one more ``Format`` (``register_format``;
spec/extending.md, "A report format of your own").
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from policyspec.files import write_atomic
from policyspec.reports.report import Report, dumps
from policyspec.reports.verdict import exit_code

__all__ = ["FORMATS", "Format", "Outputs", "add_report_flags", "outputs_of",
           "register_format", "write_reports"]


@dataclass(frozen=True)
class Format:
    """One report format, as the commands offer it."""

    flag: str
    """The command-line flag that asks for it (``--json-report``); its
    value is the path (``-``: standard output)."""
    help: str
    render: Callable[[Report], str]

    @property
    def dest(self) -> str:
        """The flag's attribute on parsed arguments."""
        return self.flag.lstrip("-").replace("-", "_")


Outputs = Mapping[str, str]
"""Where a command writes its report: a path per format name."""


def _junit(report: Report) -> str:
    return report.to_junit()


def _html(report: Report) -> str:
    from policyspec.reports.html.run_page import render_run_page

    # A replay's rows are cases, a prove run's its obligations (stats "rows").
    return render_run_page(report, rows=str(report.stats.get("rows", "requirement")))


def _markdown(report: Report) -> str:
    from policyspec.reports.markdown import run_markdown

    return run_markdown(report)


FORMATS: dict[str, Format] = {
    "json": Format("--json-report", "write the JSON report here (spec/report.md)", dumps),
    "junit": Format("--junit-xml", "write a JUnit XML report here", _junit),
    "html": Format("--html-report", "write a self-contained HTML page of the run here",
                   _html),
    "markdown": Format("--markdown", "write a short markdown summary here (a CI job page; - "
                       "for standard output)", _markdown),
}
"""Every report format, by name (module doc)."""


def register_format(name: str, format_: Format) -> Format:
    """Offer one more format to every command that writes reports (before
    their parsers are built: ``policyspec.cli`` builds them at ``main``)."""
    FORMATS[name] = format_
    return format_


def add_report_flags(parser: argparse.ArgumentParser) -> None:
    """Every format's flag, for a command that makes a report."""
    for format_ in FORMATS.values():
        parser.add_argument(format_.flag, metavar="PATH", help=format_.help)


def outputs_of(args: argparse.Namespace) -> Outputs:
    """The outputs ``add_report_flags``'s flags ask for."""
    return {name: path for name, format_ in FORMATS.items()
            if (path := getattr(args, format_.dest, None))}


def write_reports(report: Report, outputs: Outputs) -> int:
    """Write ``report`` where ``outputs`` say and return its exit code."""
    for name, path in outputs.items():
        text = FORMATS[name].render(report)
        if path == "-":
            sys.stdout.write(text)
        else:
            write_atomic(path, text)
    return exit_code(report.verdict, any(f.reproduced for f in report.failures))
