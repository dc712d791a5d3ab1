"""``policyspec new PATH``: write a starting policy for a vLLM API revision."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from policyspec.exits import EXIT_CONFORMS, UsageError

__all__ = ["add_parser"]


def add_parser(sub: Any) -> None:
    from policyspec.releases import releases_text
    from policyspec.starter import newest_released, released

    parser = sub.add_parser(
        "new",
        help="write a starting policy",
        description="Write PATH: a least-recently-used policy for a vLLM API revision, typed "
        "against that revision's Protocol (policyspec.protocols), that passes the core "
        "profile as written; comments mark where your choices go (spec/new.md). The default "
        f"revision is the newest vLLM release's ({releases_text()}).",
    )
    parser.add_argument("path", metavar="PATH", help="the .py file to write (must not exist)")
    parser.add_argument("--api", default=newest_released(), choices=released(),
                        metavar="REVISION",
                        help=f"the revision to implement: {', '.join(released())} (the ones "
                        f"that shipped in a vLLM release; default {newest_released()}, "
                        "the newest)")
    parser.add_argument("--class", dest="class_name", metavar="NAME",
                        help="the class's name (default: PATH's name in CamelCase, ending "
                        "in Policy)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from policyspec.files import write_atomic
    from policyspec.starter import class_name_for, starter

    path = Path(args.path)
    if path.suffix != ".py":
        raise UsageError(f"{path}: the policy file must end in .py")
    if path.exists():
        raise UsageError(f"{path} already exists: policyspec new writes only new files")
    try:
        name = args.class_name or class_name_for(path.stem)
        made = starter(args.api, name, str(path))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not name.isidentifier():
        raise UsageError(f"--class {name!r} is not a Python class name")
    try:
        write_atomic(path, made.source)
    except OSError as exc:
        raise UsageError(f"{path}: cannot write: {exc.strerror or exc}") from None
    from policyspec.protocols import emulated

    print(f"wrote {path}: {name}, API revision {args.api}, {emulated(args.api, manager=False)} "
          f"({made.revision.summary})\n"
          f"check it with: policyspec check {path}:{name}", file=sys.stdout)
    return EXIT_CONFORMS
