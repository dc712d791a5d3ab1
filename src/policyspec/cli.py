"""The ``policyspec`` command line.

Exit codes are in ``policyspec.exits``, which says which codes each command
returns; every command's ``--help`` lists them from there. Each subcommand lives in
``policyspec.commands.<name>`` and registers itself through ``add_parser``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from policyspec.exits import EXIT_USAGE, UsageError, exits_help
from policyspec.hash_order import run_under_fixed_hash
from policyspec.vllm.standins.gaps import StandinGap

__all__ = ["main"]

COMMANDS = (
    "check", "new", "vectors", "replay", "prove", "report", "record", "check_history", "drift",
    "simulate",
)
"""Subcommand modules under policyspec.commands, in help order."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # One line, exit 2, like every other user mistake.
        self.exit(EXIT_USAGE, f"policyspec: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    from policyspec.releases import releases_text
    from policyspec.version import __version__

    parser = _Parser(
        prog="policyspec",
        description="Executable specification and conformance suite for vLLM cache policies "
        f"(API revisions {releases_text()}, and older ones).",
        epilog="Each command's --help lists the exit codes it returns: 0 conforms, 1 does not "
        "(or interrupted), 2 could not run, 3 a MUST that applies was not judged, 4 incomplete "
        "(time limit).",
    )
    parser.add_argument("--version", action="version", version=f"policyspec {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in COMMANDS:
        module = importlib.import_module(f"policyspec.commands.{name}")
        module.add_parser(sub)
        command = name.replace("_", "-")
        # Written here from one table, so no command's help can leave a code out.
        sub.choices[command].epilog = exits_help(command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The command: ``argv`` None is a process of its own (the console
    script, ``python -m policyspec``), which first makes sure it hashes
    under the one seed every run uses (policyspec.hash_order); a caller
    passing ``argv`` runs in its own process as it is."""
    if argv is None:
        run_under_fixed_hash(sys.argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.handler(args)
    except (UsageError, StandinGap) as exc:
        print(f"policyspec: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        # A command that reports what ran catches it itself; here nothing
        # was reported, and the verdict rule's code for it is the same.
        from policyspec.reports.verdict import INTERRUPTED, exit_code

        print("policyspec: interrupted", file=sys.stderr)
        return exit_code(INTERRUPTED, failures=False)
    return code


if __name__ == "__main__":
    # Run through the package so that exception classes are the package's own.
    from policyspec.cli import main as package_main

    sys.exit(package_main())
