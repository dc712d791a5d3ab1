"""The ``policyspec`` command line.

Exit codes are in ``policyspec.exits``. Each subcommand lives in
``policyspec.commands.<name>`` and registers itself through ``add_parser``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from policyspec.exits import EXIT_USAGE, UsageError
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
    from policyspec import __version__

    parser = _Parser(
        prog="policyspec",
        description="Executable specification and conformance suite for vLLM cache policies.",
    )
    parser.add_argument("--version", action="version", version=f"policyspec {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in COMMANDS:
        module = importlib.import_module(f"policyspec.commands.{name}")
        module.add_parser(sub)
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
        print("policyspec: interrupted", file=sys.stderr)
        return 130
    return code


if __name__ == "__main__":
    # Run through the package so that exception classes are the package's own.
    from policyspec.cli import main as package_main

    sys.exit(package_main())
