"""``policyspec vectors --out DIR``: write the golden vectors, generated from
the model (spec/vectors.md); ``--check DIR`` says whether DIR holds exactly
what the model generates now."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from policyspec.exits import EXIT_CONFORMS, EXIT_FAILS, UsageError

__all__ = ["add_parser"]


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "vectors",
        help="write the golden vectors (JSON Lines) generated from the model",
        description="Write the golden vectors: vLLM's scenarios, one case per catalogued "
        "fault, and seeded random walks, each call with the results the model requires. "
        "Regenerating gives byte-identical files. They hold policy calls, no vLLM release's "
        "manager: replay plays them on a policy of any release.",
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", metavar="DIR", help="write the files into DIR")
    where.add_argument("--check", metavar="DIR",
                       help="exit 1 unless DIR holds exactly the files generated now")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from policyspec.vectors import generate, write_vectors

    if args.out:
        try:
            written = write_vectors(Path(args.out))
        except OSError as exc:
            raise UsageError(f"--out: cannot write into {args.out}: {exc.strerror or exc}"
                             ) from None
        for path in written:
            cases = len(path.read_text(encoding="utf-8").splitlines()) - 1
            print(f"{path}: {cases} cases")
        return EXIT_CONFORMS
    directory = Path(args.check)
    if not directory.is_dir():
        raise UsageError(f"--check: {directory} is not a directory")
    stale = []
    for filename, text in generate().items():
        path = directory / filename
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            stale.append(filename)
    for filename in stale:
        print(f"{directory / filename}: differs from what the model generates now",
              file=sys.stderr)
    if stale:
        print(f"regenerate with: policyspec vectors --out {directory}", file=sys.stderr)
        return EXIT_FAILS
    print(f"{directory}: up to date")
    return EXIT_CONFORMS
