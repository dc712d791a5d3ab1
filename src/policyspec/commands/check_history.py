"""``policyspec check-history PATH...``: judge a recorded history (from
``policyspec.guard`` or ``policyspec record``) against the model, without
the policy, and say for every profile whether it conforms or where it
failed first (spec/history.md)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from policyspec.exits import UsageError
from policyspec.reports.judged_history import history_report
from policyspec.reports.write import add_report_flags, outputs_of, write_reports

__all__ = ["add_parser", "render", "verdict_document"]


def add_parser(sub: Any) -> None:
    from policyspec.releases import releases_text

    parser = sub.add_parser(
        "check-history",
        help="judge a recorded history against the model",
        description="Judge the history files (policyspec-history/1) against the model in one "
        "streaming pass and report, per profile, conforms or the first failure (requirement "
        "id and call number) with a replayable window. Rotated segments PATH.NNNNNN are "
        "read after PATH. --json-report, --junit-xml, --html-report and --markdown write "
        "the report family of policyspec check (the window of each failure as its trace). "
        "A history records the calls of the vLLM that ran the policy (in production, or "
        f"policyspec record's emulated manager); it is judged as the API of its revision's "
        f"release ({releases_text()}), which the report names.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="history file(s), in order")
    parser.add_argument("--profile", help="judge this profile only (default: core, lru and "
                        "the exact profiles of the recorded revision's vLLM release)")
    add_report_flags(parser)
    parser.add_argument("--json", metavar="OUT", dest="json_out",
                        help="write the history's own verdict document (every profile's "
                        "verdict, each window's vector case, the counts) as JSON")
    parser.add_argument("--cases", metavar="DIR",
                        help="write the windows as a vector file DIR/history.jsonl "
                        "(policyspec replay DIR TARGET runs them)")
    parser.add_argument("--window", type=int, default=64, metavar="N",
                        help="calls of history before a failure that its window keeps "
                        "(default 64)")
    parser.set_defaults(handler=run)


def verdict_document(verdict: Any, paths: list[str], cases: dict[str, Any]) -> dict[str, Any]:
    """The JSON form of a ``history.judge.Verdict``."""

    def violation(v: Any) -> dict[str, Any] | None:
        if v is None:
            return None
        return {"requirement": v.requirement, "call": v.call, "kind": v.kind,
                "profile": v.profile, "message": v.message, "key": v.key,
                "culprit": v.culprit}

    return {
        "schema": "policyspec-history-verdict/1",
        "history": paths,
        "calls": verdict.calls,
        "verdict": "pass" if verdict.passed else "fail",
        "header": {k: v for k, v in verdict.header.items() if k != "state"},
        "profiles": [
            {"profile": p.profile,
             "verdict": "conforms" if p.conforms else ("fails" if p.first else "not judged"),
             "note": p.note, "first_failure": violation(p.first),
             "should": [violation(v) for v in p.should],
             "window": cases.get(p.profile)}
            for p in verdict.profiles
        ],
        "caller": violation(verdict.caller),
        "exercised": verdict.exercised,
        "violations": verdict.counts,
        "gaps": verdict.gaps,
    }


def render(verdict: Any) -> list[str]:
    """The Elle-style lines: one per profile, then the caller contract."""
    lines = []
    for p in verdict.profiles:
        if p.first is not None:
            v = p.first
            culprit = f" (likely {v.culprit})" if v.culprit else ""
            lines.append(f"{p.profile}: no, {v.requirement}{culprit} at call {v.call:,}: "
                         f"{v.message}")
        elif not p.judged:
            lines.append(f"{p.profile}: not judged ({p.note})")
        else:
            lines.append(f"{p.profile}: conforms" + (f" ({p.note})" if p.note else ""))
        for v in p.should:
            lines.append(f"  {p.profile} SHOULD: {v.requirement} at call {v.call:,}: "
                         f"{v.message}")
    c = verdict.caller
    if c is None:
        lines.append("caller contract: kept")
    else:
        failed = [p.first.call for p in verdict.profiles if p.first is not None]
        after = (f" (after the policy's first failure at call {min(failed):,}: it may "
                 "follow from it)") if failed and min(failed) < c.call else ""
        lines.append(f"caller contract: broken, {c.requirement} at call {c.call:,}{after}: "
                     f"{c.message}")
    return lines


def run(args: argparse.Namespace) -> int:
    from policyspec.history.format import HistoryError
    from policyspec.history.judge import IN_PLACE, judge_paths, window_case
    from policyspec.profiles import get_profile
    from policyspec.protocols import emulated

    profiles: tuple[str, ...] | None = None
    if args.profile:
        try:
            get_profile(args.profile)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        profiles = (args.profile,)
    try:
        verdict = judge_paths(args.paths, profiles)
        cases: dict[str, Any] = {}
        for p in verdict.profiles:
            if p.first is not None and p.first.profile in IN_PLACE:
                cases[p.profile] = window_case(args.paths, p.first, window=args.window,
                                               name=f"history-{p.profile}-{p.first.requirement}"
                                               f"-call-{p.first.call}")
    except HistoryError as exc:
        raise UsageError(str(exc)) from None
    h = verdict.header
    api = str(h.get("api") or "R9")
    print(f"{args.paths[0]}: {verdict.calls:,} calls (capacity {h.get('capacity')}, target "
          f"{h.get('target')}, recorded in {h.get('mode')} mode; API {api}, "
          f"{emulated(api, manager=False)})")
    for gap in verdict.gaps:
        print(f"warning: {gap}")
    for line in render(verdict):
        print(line)
    if args.cases and cases:
        from policyspec.vectors.schema import SCHEMA, dump_line
        from policyspec.version import SPEC_VERSION

        unique = list({json.dumps(c["calls"]): c for c in cases.values()}.values())
        directory = Path(args.cases)
        directory.mkdir(parents=True, exist_ok=True)
        out = directory / "history.jsonl"
        out.write_text(dump_line({"schema": SCHEMA, "spec_version": SPEC_VERSION,
                                  "file": "history", "description": "windows of a history "
                                  "around its first failures", "cases": len(unique)})
                       + "".join(dump_line(c) for c in unique), encoding="utf-8")
        print(f"windows: {out} ({len(unique)} case{'s' if len(unique) != 1 else ''}; "
              f"policyspec replay {directory} TARGET --profile lru)")
    if args.json_out:
        Path(args.json_out).write_text(
            json.dumps(verdict_document(verdict, list(args.paths), cases), indent=1) + "\n",
            encoding="utf-8")
    # The same report family as policyspec check's (reports.judged_history), and
    # its exit code by the one verdict rule: a history nothing of which could
    # be judged is unjudged (3), not a run that could not start.
    return write_reports(history_report(verdict, list(args.paths), cases), outputs_of(args))
