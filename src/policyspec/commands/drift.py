"""``policyspec drift [VLLM]``: compare a vLLM's policy interface with the
API revisions policyspec knows (spec/drift.md). Exit 0: a known revision;
1: it differs (every difference, one line each); 2: it cannot be read."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from policyspec.exits import EXIT_CONFORMS, EXIT_USAGE

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    from policyspec.releases import releases_text

    parser = sub.add_parser(
        "drift",
        help="compare a vLLM's policy interface with the revisions policyspec knows",
        description="Read VLLM (default: the importable vllm, located without importing it; "
        "or a vLLM wheel file; or a source tree holding vllm/v1/kv_offload) with ast and "
        "compare what the spec depends on (CachePolicy's methods and their parameters, "
        "defaults that call other methods, ChunkStatus, ReqContext, the policy methods the "
        "managers call) with the API revisions policyspec knows, the ones the releases it "
        f"emulates ship ({releases_text()}) among them: the known revision, or every "
        "difference from the nearest one.",
    )
    parser.add_argument("vllm", nargs="?", metavar="VLLM",
                        help="a vLLM wheel file or source tree (default: the importable vllm)")
    parser.add_argument("--json", metavar="PATH", dest="json_path",
                        help="also write the result as JSON (schema policyspec-drift/1)")
    parser.add_argument("--record", metavar="REVISION",
                        help="store this vLLM's fingerprint as a known revision (R11): the "
                        "signature.json of its release folder (policyspec/releases/), "
                        "else policyspec/vllm/drift/known/R11.json (maintainers, in an "
                        "editable install)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from policyspec.files import write_atomic
    from policyspec.vllm.drift import (
        UnreadableError,
        drift_of,
        open_vllm,
        read_fingerprint,
        record,
        unreadable_json,
    )

    source = args.vllm or "the importable vllm"
    try:
        if args.record:
            files = open_vllm(args.vllm)
            path = record(read_fingerprint(files), args.record)
            print(f"policyspec drift: recorded {files.label} (vLLM {files.version}) as API "
                  f"revision {args.record} in {path}")
            return EXIT_CONFORMS
        outcome = drift_of(args.vllm)
    except (UnreadableError, ValueError) as exc:
        print(f"policyspec: error: {exc}", file=sys.stderr)
        if args.json_path:
            write_atomic(args.json_path, _dumps(unreadable_json(source, str(exc))))
        return EXIT_USAGE
    if args.json_path:
        write_atomic(args.json_path, _dumps(outcome.to_json()))
    sys.stdout.write("".join(f"{line}\n" for line in outcome.lines()))
    return outcome.exit_code


def _dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2) + "\n"
