"""``policyspec prove``: symbolic evidence with CrossHair (spec/prove.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from policyspec.exits import EXIT_USAGE, UsageError
from policyspec.reports.write import add_report_flags, outputs_of, write_reports

__all__ = ["add_parser", "run"]


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected seconds > 0, got {text}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a count, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a count of at least 1, got {text}")
    return value


def add_parser(sub: Any) -> None:
    from policyspec.prove.canonical import OPERATIONS
    from policyspec.prove.proof_target import DECLARED
    from policyspec.prove.prover import DEFAULT_MODEL_BUDGET, DEFAULT_TARGET_BUDGET
    from policyspec.releases import releases_text

    parser = sub.add_parser(
        "prove",
        help="symbolic evidence with CrossHair (the model, or a policy)",
        description="With --model: CrossHair checks the model's own contracts. With TARGET: "
        "every operation of the policy's API revision is checked against the profile's "
        "model from a symbolic pre-state, the state built and read back through the "
        "policy's own methods (spec/prove.md), its operations those of the vLLM release of "
        f"its revision ({releases_text()}), with no manager emulated; the report names the "
        "release.",
    )
    parser.add_argument("target", nargs="?", help="pkg.module:Class or path/to/file.py:Class")
    parser.add_argument("--model", action="store_true", help="prove the model itself")
    parser.add_argument("--profile", default="core",
                        help="core (default), or an exact profile (lru, arc, lru-0.33, ...)")
    parser.add_argument("--budget", type=_seconds, default=None,
                        help=f"target wall-clock seconds (default {DEFAULT_TARGET_BUDGET:g} "
                        f"for a policy, {DEFAULT_MODEL_BUDGET:g} for --model on 2 cores)")
    parser.add_argument("--abstraction", metavar="MODULE:NAME",
                        help="check through this hand-written (to_model, from_model) pair "
                        f"instead of the derived one ('{DECLARED}': the one the policy's module "
                        "declares or registers)")
    parser.add_argument("--only", action="append", metavar="NAME",
                        help=f"check only this operation ({', '.join(OPERATIONS)}) or model "
                        "function; repeatable")
    parser.add_argument("--strict", action="store_true", help="SHOULD failures count too")
    parser.add_argument("--jobs", type=int, default=None,
                        help="CrossHair processes at a time (default: CPU count)")
    parser.add_argument("--iterations", type=_count, default=None, metavar="N",
                        help="end each obligation after N CrossHair paths in a row that reach "
                        "no new code, rather than at its share of the budget (which then only "
                        "caps it): the same search on any machine")
    parser.add_argument("--fail-fast", "-x", action="store_true",
                        help="stop every obligation at the first counterexample")
    add_report_flags(parser)
    parser.add_argument("--write-tests", metavar="DIR",
                        help="write each counterexample's pytest test into DIR")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from policyspec.prove.proof_target import ProveUsageError, TargetSpec
    from policyspec.prove.prover import (
        DEFAULT_MODEL_BUDGET,
        DEFAULT_TARGET_BUDGET,
        prove_model,
        prove_target,
    )

    if args.model == bool(args.target):
        raise UsageError("give either --model or a TARGET")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if args.model and (outputs_of(args) or args.fail_fast or args.iterations):
        raise UsageError("--json-report, --junit-xml, --html-report, --markdown, --fail-fast "
                         "and --iterations go with a TARGET")

    def progress(message: str) -> None:
        if not args.quiet:
            print(f"[policyspec prove] {message}", file=sys.stderr, flush=True)

    only = tuple(args.only or ())
    try:
        if args.model:
            report = prove_model(args.budget or DEFAULT_MODEL_BUDGET, workers=args.jobs,
                                 only=only, progress=progress)
        else:
            spec = TargetSpec(args.target, args.profile, args.abstraction, args.strict)
            report = prove_target(spec, args.budget or DEFAULT_TARGET_BUDGET,
                                  workers=args.jobs, only=only, iterations=args.iterations,
                                  fail_fast=args.fail_fast, progress=progress)
    except ProveUsageError as exc:
        print(f"policyspec: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    gap = _own_gap(report)
    if gap is not None:  # policyspec's, not the policy's: no obligation was judged on it
        print(f"policyspec: error: {gap}", file=sys.stderr)
        return EXIT_USAGE
    sys.stdout.write(report.to_text())
    if not args.model:
        _write_reports(args, report.to_report())
    if args.write_tests:
        folder = Path(args.write_tests)
        folder.mkdir(parents=True, exist_ok=True)
        for index, finding in enumerate(report.confirmed_findings):
            name = finding.obligation.replace(".", "_").replace(" ", "_")
            path = folder / f"test_prove_{name}_{index}.py"
            path.write_text(finding.test)
            print(f"wrote {path}", file=sys.stderr)
    return report.exit_code


_GAP = "StandinGap: "


def _own_gap(report: Any) -> str | None:
    """The line of policyspec's own gap (``standins.gaps``) an obligation's
    CrossHair run stopped on, if any: it ran in another process, so it
    comes back as the text of its error."""
    for result in report.results:
        detail = str(result.detail)
        if _GAP in detail:
            return detail.split(_GAP, 1)[1].splitlines()[0]
    return None


def _write_reports(args: argparse.Namespace, report: Any) -> None:
    """The reports asked for, by check's writer (the same verdict, hence the
    same exit code)."""
    write_reports(report, outputs_of(args))
