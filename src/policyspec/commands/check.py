"""``policyspec check TARGET``: run the conformance suite on a policy."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from policyspec.exits import EXIT_CONFORMS, EXIT_USAGE, UsageError
from policyspec.protocols import API_HELP
from policyspec.reports.write import add_report_flags, outputs_of, write_reports

if TYPE_CHECKING:
    from policyspec.options import CheckOptions
    from policyspec.profiles import Profile
    from policyspec.reports.report import Report

__all__ = ["add_parser", "options_of", "positive_int"]


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {value}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected seconds >= 0, got {text}")
    return value


def _budget(text: str) -> str | float:
    from policyspec.run.budget import BUDGETS

    if text in BUDGETS:
        return text
    try:
        units = float(text)
    except ValueError:
        choices = ", ".join(sorted(BUDGETS))
        raise argparse.ArgumentTypeError(
            f"expected {choices} or a number of work units, got {text!r}"
        ) from None
    if not units > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of work units, got {text}")
    return units


def _time_limit(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected seconds > 0, got {text}")
    return value


def _shard(text: str) -> tuple[int, int]:
    """``K/N`` with 1 <= K <= N."""
    try:
        index, total = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected K/N (e.g. 2/8), got {text!r}") from None
    if not 1 <= index <= total:
        raise argparse.ArgumentTypeError(f"expected K/N with 1 <= K <= N, got {text}")
    return index, total


def add_parser(sub: Any) -> None:
    from policyspec.engines import ENGINES
    from policyspec.options import DEFAULT_CALL_TIMEOUT, DEFAULT_CAPACITY
    from policyspec.releases import releases_text

    parser = sub.add_parser(
        "check",
        help="check a policy against the spec",
        description="Check TARGET (pkg.module:Class or path/to/file.py:Class), built as "
        "Class(cache_capacity=N), or a policy in any language (--exec), against a profile. "
        "The policy is driven as the vLLM release of its API revision drives it, that "
        f"release's manager emulated by the vllm-manager and trace engines ({releases_text()}); "
        "the report names the release.",
    )
    parser.add_argument("target", nargs="?",
                        help="pkg.module:Class or path/to/file.py:Class (omitted with --exec)")
    parser.add_argument("--exec", metavar="COMMAND", dest="exec_command",
                        help="check a policy written in any language: run COMMAND and speak "
                        "the line protocol of spec/protocol.md over its stdin/stdout")
    parser.add_argument("--exec-keys", choices=("int", "hex"), default="int",
                        help="keys sent to --exec as JSON numbers (default) or as hex strings "
                        "of vLLM OffloadKey bytes")
    _add_exhaustive_options(parser)
    from policyspec.profiles import descriptions

    parser.add_argument("--profile", default="core",
                        help=f"one of {', '.join(descriptions())} (default core: what every "
                        "policy must do; --list-profiles says what each checks), or "
                        "package.module:NAME")
    parser.add_argument("--list-profiles", action="store_true",
                        help="name every profile with one line each, and exit")
    parser.add_argument("--strict", action="store_true", help="SHOULD failures fail the run")
    parser.add_argument("--seed", type=positive_int, default=0, help="random seed (default 0)")
    parser.add_argument("--budget", type=_budget, default="standard",
                        help="the work the engines do: quick (15 units, ~16 s on an idle 2-core "
                        "machine), standard (50 units, ~51 s, default), deep (240 units), or a "
                        "number of units; the same work, and verdict, on any machine")
    parser.add_argument("--time-limit", type=_time_limit, default=None, metavar="SECONDS",
                        help="stop after this much wall time: a run stopped before its work is "
                        "done is INCOMPLETE (exit 4), never a pass; a failure found counts "
                        "(default: no limit)")
    parser.add_argument("--engine", action="append", choices=sorted(ENGINES), dest="engines",
                        help="run only these engines (repeatable); default: all default engines")
    parser.add_argument("--capacity", type=positive_int, default=None,
                        help=f"cache_capacity for the policy (default {DEFAULT_CAPACITY}; "
                        "unless this is given, the stateful and manager engines draw one per "
                        "example, the fast engine makes long runs at 100,000 and the size "
                        "engine draws its own: spec/sizes.md)")
    parser.add_argument("--trace", metavar="FILE",
                        help="a serving trace (Mooncake JSONL or policyspec's format, "
                        "spec/traffic.md) for the trace engine to play whole, at --capacity, "
                        "instead of its bundled sample")
    add_report_flags(parser)
    parser.add_argument("--api", help=API_HELP)
    parser.add_argument("--no-stand-in", action="store_true",
                        help="refuse to provide vLLM stand-in modules when vllm is missing")
    parser.add_argument("--placeholder", action="append", dest="placeholders", metavar="NAME",
                        help="keep the vLLM name NAME, which the stand-ins do not model (a "
                        "fork's PolicyStats), an inert placeholder for the whole check "
                        "(repeatable); the report names it and the verdict holds with it")
    parser.add_argument("--call-timeout", type=_seconds, default=DEFAULT_CALL_TIMEOUT,
                        metavar="SECONDS",
                        help=f"time limit of one policy call (default {DEFAULT_CALL_TIMEOUT:g}; "
                        "0 turns it off)")
    parser.add_argument("--known-failing", metavar="FILE",
                        help="requirement ids the policy is known to break (one per line, "
                        "# comments); a listed id that passes fails the run")
    parser.add_argument("--hypothesis-db", metavar="DIR",
                        help="keep Hypothesis's example database here (cache it in CI so "
                        "failures found once are replayed first)")
    parser.add_argument("--shard", type=_shard, default=(1, 1), metavar="K/N",
                        help="run the K-th of N deterministic parts of the campaign (CI "
                        "matrix): random engines use the seed SEED*N+K-1, the exhaustive "
                        "engine its K-th part of the search space")
    parser.add_argument("--isolate", action="store_true",
                        help="run the policy in a child process under a memory limit, so that "
                        "os._exit, crashes and memory exhaustion become verdicts")
    parser.add_argument("--memory-limit", type=positive_int, default=4096, metavar="MB",
                        help="address-space limit of the --isolate child (default 4096)")
    parser.add_argument("--jobs", "-j", type=positive_int, default=None, metavar="N",
                        help="worker processes (default: the cores this process may use; 1: "
                        "every engine in turn in this process); each time-budgeted engine "
                        "runs N copies at once, the exhaustive engine splits its space")
    parser.add_argument("--fail-fast", "-x", action="store_true",
                        help="stop the other engines and workers at the first MUST failure "
                        "(then shrink it)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="also note what each engine did (sizes drawn, states reached, "
                        "copies run); the JSON report always has them")
    parser.set_defaults(handler=run)


def _add_exhaustive_options(parser: argparse.ArgumentParser) -> None:
    from policyspec.engines.exhaustive import DEFAULT_BOUNDS

    group = parser.add_argument_group(
        "exhaustive engine (--engine exhaustive; bounded by these, not by --budget)")
    group.add_argument("--depth", type=positive_int, metavar="D",
                       help=f"every legal sequence of up to D actions (default "
                       f"{DEFAULT_BOUNDS.depth})")
    group.add_argument("--keys", type=positive_int, metavar="K",
                       help=f"over K keys (default {DEFAULT_BOUNDS.keys})")
    group.add_argument("--no-symmetry", action="store_true",
                       help="run sequences that differ only by key names separately (for "
                       "policies whose behaviour depends on key values or hash order)")


def _check_trace(path: str) -> None:
    """The whole trace is read once before the run: a bad line is exit 2
    before anything runs or is written."""
    from policyspec.workload.reader import TraceFormatError, validate_trace

    try:
        requests, _ = validate_trace(path)
    except TraceFormatError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"--trace: cannot read {path}: {exc.strerror or exc}") from None
    if requests == 0:
        raise UsageError(f"--trace: {path} holds no request")


def _terminate(signum: int, frame: object) -> None:
    # A time limit (SIGTERM) ends the run like Ctrl-C: with a report.
    raise KeyboardInterrupt


@contextmanager
def _hypothesis_storage(database: str | None) -> Iterator[None]:
    """Hypothesis keeps caches in ``./.hypothesis`` (its home directory) even
    without an example database: a check asked for none (no
    ``--hypothesis-db``) keeps them in a temporary directory instead, unless
    HYPOTHESIS_STORAGE_DIRECTORY names one."""
    if database is not None or os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        yield
        return
    from hypothesis.configuration import set_hypothesis_home_dir

    with tempfile.TemporaryDirectory(prefix="policyspec-hypothesis-") as home:
        set_hypothesis_home_dir(home)
        try:
            yield
        finally:
            set_hypothesis_home_dir(None)


def options_of(args: argparse.Namespace) -> CheckOptions:
    """The ``session.CheckOptions`` these command-line options ask for."""
    from policyspec.options import DEFAULT_CAPACITY, CheckOptions

    return CheckOptions(
        budget=args.budget, time_limit=args.time_limit, seed=args.seed, strict=args.strict,
        engines=tuple(args.engines) if args.engines else None,
        capacity=DEFAULT_CAPACITY if args.capacity is None else args.capacity,
        capacity_fixed=args.capacity is not None, call_timeout=args.call_timeout,
        shard=args.shard,
        hypothesis_db=args.hypothesis_db, depth=args.depth, keys=args.keys,
        symmetry=not args.no_symmetry, jobs=args.jobs, fail_fast=args.fail_fast,
        isolate=args.isolate,
        memory_limit_mb=args.memory_limit, api=args.api, stand_in=not args.no_stand_in,
        placeholders=tuple(args.placeholders or ()),
        trace=args.trace,
    )


def run(args: argparse.Namespace) -> int:
    from policyspec.adapters import TargetError
    from policyspec.profiles import get_profile
    from policyspec.session import check_target

    if args.list_profiles:
        from policyspec.profiles import descriptions

        found = descriptions()
        width = max(map(len, found))
        for name, description in found.items():
            print(f"{name:<{width}}  {description}")
        return EXIT_CONFORMS
    options = options_of(args)
    options.validate()
    if args.trace is not None:
        _check_trace(args.trace)
    try:
        profile = get_profile(args.profile)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    known: tuple[list[Any], list[str]] | None = None
    if args.known_failing:
        from policyspec.reports.known_failing import read_known_failing

        try:
            known = read_known_failing(args.known_failing)
        except OSError as exc:
            raise UsageError(f"--known-failing: cannot read {args.known_failing}: "
                             f"{exc.strerror or exc}") from None
    if (args.target is None) == (args.exec_command is None):
        raise UsageError("give a TARGET or --exec COMMAND (exactly one)")
    if args.isolate and args.exec_command is not None:
        raise UsageError("--isolate is for a Python TARGET; --exec already runs in a child")
    if args.placeholders and args.exec_command is not None:
        raise UsageError("--placeholder is for a Python TARGET loaded on the vLLM stand-ins")
    if args.placeholders and args.no_stand_in:
        raise UsageError("--placeholder keeps names of the vLLM stand-ins: it cannot go "
                         "with --no-stand-in")

    def progress(message: str) -> None:
        if not args.quiet:
            print(f"[policyspec] {message}", file=sys.stderr, flush=True)

    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        with _hypothesis_storage(args.hypothesis_db):
            if args.exec_command is not None:
                report = _check_exec(args, profile, options, progress)
            else:
                report = check_target(args.target, profile, options, progress=progress)
    except TargetError as exc:
        print(f"policyspec: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        signal.signal(signal.SIGTERM, previous)
    if known is not None:
        from policyspec.reports.known_failing import apply_known_failing

        apply_known_failing(report, *known)
    code = write_reports(report, outputs_of(args))
    sys.stdout.write(report.to_text(verbose=args.verbose))
    return code


def _check_exec(
    args: argparse.Namespace, profile: Profile, options: CheckOptions,
    progress: Callable[[str], None],
) -> Report:
    """A policy in any language, behind the line protocol (spec/protocol.md)."""
    from policyspec.adapters import TargetError
    from policyspec.lineproto import ChildError, ExecTarget
    from policyspec.session import run_check

    try:
        limit = args.call_timeout + 2.0 if args.call_timeout > 0 else 3600.0
        target = ExecTarget(args.exec_command, keys=args.exec_keys, timeout=limit)
    except (ChildError, ValueError) as exc:
        raise TargetError(f"--exec: {exc}") from None
    try:
        return run_check(target.subject, profile, options=options, progress=progress)
    finally:
        target.close()
