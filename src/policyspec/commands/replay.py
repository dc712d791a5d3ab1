"""``policyspec replay DIR TARGET`` (or ``--exec COMMAND``): run the golden
vectors of DIR against a policy and name the cases it fails."""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from policyspec.exits import EXIT_USAGE, UsageError
from policyspec.protocols import API_HELP
from policyspec.reports.report import Report
from policyspec.reports.verdict import exit_code
from policyspec.reports.write import add_report_flags, outputs_of, write_reports

__all__ = ["add_parser"]


def add_parser(sub: Any) -> None:
    from policyspec.options import DEFAULT_CALL_TIMEOUT
    from policyspec.releases import releases_text

    parser = sub.add_parser(
        "replay",
        help="run golden vectors against a policy",
        description="Replay the vector files (*.jsonl) of DIR against TARGET (a Python "
        "class, as for check) or a policy in any language (--exec). Cases of the profiles "
        "the chosen profile includes run. The calls go straight to the policy's API, as the "
        f"vLLM release of its revision makes them ({releases_text()}), with no manager "
        "emulated; the summary names the release.",
    )
    parser.add_argument("directory", metavar="DIR", help="directory of vector files")
    parser.add_argument("target", nargs="?",
                        help="pkg.module:Class or path/to/file.py:Class (omitted with --exec)")
    parser.add_argument("--exec", metavar="COMMAND", dest="exec_command",
                        help="replay against a program speaking spec/protocol.md")
    parser.add_argument("--exec-keys", choices=("int", "hex"), default="int",
                        help="keys sent to --exec as JSON numbers (default) or hex strings")
    parser.add_argument("--profile", default="core",
                        help="core (default: core cases only), lru (core and lru cases), ...")
    parser.add_argument("--strict", action="store_true", help="SHOULD failures fail the run")
    parser.add_argument("--call-timeout", type=float, default=DEFAULT_CALL_TIMEOUT,
                        metavar="SECONDS", help="time limit of one policy call (0: none)")
    parser.add_argument("--api", help=API_HELP)
    parser.add_argument("--no-stand-in", action="store_true",
                        help="refuse to provide vLLM stand-in modules when vllm is missing")
    add_report_flags(parser)  # (the HTML page: one row per case, each failing one's timeline)
    parser.add_argument("-q", "--quiet", action="store_true", help="print failing cases only")
    parser.set_defaults(handler=run)


@contextlib.contextmanager
def _subject(args: argparse.Namespace) -> Iterator[Any]:
    from policyspec.adapters import TargetError, installed, load_subject

    if (args.target is None) == (args.exec_command is None):
        raise UsageError("give a TARGET or --exec COMMAND (exactly one)")
    if args.exec_command is not None:
        from policyspec.lineproto import ChildError, ExecTarget

        limit = args.call_timeout if args.call_timeout > 0 else 3600.0
        try:
            target = ExecTarget(args.exec_command, keys=args.exec_keys, timeout=limit)
        except (ChildError, ValueError) as exc:
            raise UsageError(f"--exec: {exc}") from None
        with target:
            yield target.subject
        return
    try:
        subject = load_subject(args.target, stand_in=not args.no_stand_in, api=args.api)
    except TargetError as exc:
        raise UsageError(str(exc)) from None
    with contextlib.nullcontext() if args.no_stand_in else installed():
        yield subject


def run(args: argparse.Namespace) -> int:
    from policyspec.harness.watchdog import Watchdog
    from policyspec.profiles import get_profile
    from policyspec.vectors import VectorError, read_vectors, replay_directory, vector_files
    from policyspec.version import SPEC_VERSION

    try:
        profile = get_profile(args.profile)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    directory = Path(args.directory)
    files = list(vector_files(directory)) if directory.is_dir() else []
    if not files:
        raise UsageError(f"{directory}: no vector files (*.jsonl)")
    try:
        for path in files:
            header, _ = read_vectors(path)
            if header.get("spec_version") != SPEC_VERSION:
                print(f"policyspec: warning: {path.name} was generated for spec "
                      f"{header.get('spec_version')}, this is spec {SPEC_VERSION}",
                      file=sys.stderr)
    except VectorError as exc:
        raise UsageError(str(exc)) from None
    started = time.monotonic()
    with _subject(args) as subject, Watchdog(args.call_timeout):
        results = replay_directory(subject, directory, profile.includes)
    from policyspec.vectors.replay_report import replay_report

    report = replay_report(subject, profile, directory, results, strict=args.strict,
                           seconds=time.monotonic() - started)
    write_reports(report, outputs_of(args))  # (the exit code is the replay's, below)
    return _report(results, args, report)


def _report(results: list[Any], args: argparse.Namespace, report: Report) -> int:
    failed = [r for r in results if not r.passed]
    for r in failed:
        exposes = f" [{r.exposes}]" if r.exposes else ""
        print(f"FAIL ({r.level}) {r.file} {r.name}{exposes}: step {r.step}: {r.message}")
    if not args.quiet:
        must = sum(1 for r in failed if r.level == "MUST")
        print(f"{len(results)} cases, {len(results) - len(failed)} passed, {len(failed)} failed "
              f"({must} MUST, {len(failed) - must} SHOULD); API {report.api} "
              f"({report.emulated})")
    if not results:
        print("policyspec: error: no case applies to this profile", file=sys.stderr)
        return EXIT_USAGE
    return exit_code(report.verdict, any(f.reproduced for f in report.failures))
