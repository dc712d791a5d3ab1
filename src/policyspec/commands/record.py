"""``policyspec record TARGET --out PATH``: run TARGET under
``policyspec.guard`` behind the emulation of the offloading manager of its
vLLM release (0.33's, or 0.34's for an R10 policy: ``policyspec.vllm.manager``),
driven by its request traffic (``policyspec.vllm.traffic``), and write the
history: to try the guard and ``check-history`` without a vLLM server."""

from __future__ import annotations

import argparse
import functools
import sys
import time
from typing import Any

from policyspec.exits import EXIT_CONFORMS, EXIT_FAILS, UsageError

__all__ = ["add_parser", "record"]


def add_parser(sub: Any) -> None:
    from policyspec.releases import RELEASES, releases_text

    parser = sub.add_parser(
        "record",
        help="record a history of a policy behind the emulated vLLM manager "
        f"({' or '.join(r.version for r in RELEASES)})",
        description="Drive TARGET (pkg.module:Class or path/to/file.py:Class) under "
        "policyspec.guard through the manager workload and write its history to PATH. The "
        "manager is the emulated one of the vLLM release of the policy's API revision "
        f"({releases_text()}; an older revision with request hooks: vLLM "
        f"{RELEASES[0].version}'s); the summary names it.",
    )
    parser.add_argument("target", metavar="TARGET")
    parser.add_argument("--out", required=True, metavar="PATH", help="the history file")
    parser.add_argument("--calls", type=int, default=100_000, metavar="N",
                        help="policy calls to record, at least (default 100000)")
    parser.add_argument("--seed", type=int, default=0, metavar="S")
    parser.add_argument("--capacity", type=int, default=32, metavar="C",
                        help="chunks of the manager's pool (default 32)")
    parser.add_argument("--mode", choices=("record", "check"), default="record",
                        help="the guard's mode (check also judges core online)")
    parser.add_argument("--judge", choices=("inline", "process"), default="inline",
                        help="where check mode judges: in the calling thread (default) or in "
                        "a second process fed as the history is written")
    parser.add_argument("--api", choices=tuple(r.revision for r in RELEASES), default=None,
                        help="the revision to drive a policy that fits several as (default: "
                        f"the installed vLLM's, else the newest: {RELEASES[-1].revision})")
    parser.add_argument("--two-threads", action="store_true",
                        help="manager calls from two threads (as 0.33's tiering poll thread)")
    parser.set_defaults(handler=run)


def record(target: str, out: str, *, calls: int, seed: int = 0, capacity: int = 32,
           mode: str = "record", two_threads: bool = False, api: str | None = None,
           judge: str = "inline") -> tuple[Any, BaseException | None]:
    """The guard after the run, and what stopped it early (None: nothing).
    The target is loaded as ``check`` loads it first (``load_subject``:
    the same revision choice, one line for a constructor that raises or a
    class no revision fits), so that the guard records a policy driven as
    the check would drive it. Raises TargetError for a user mistake."""
    from policyspec.adapters import installed, load_subject

    with installed():  # vLLM stand-ins for the whole run when vLLM is missing
        subject = load_subject(target, prefer=api)
        return _record(target, out, calls=calls, seed=seed, capacity=capacity, mode=mode,
                       two_threads=two_threads, api=subject.api, judge=judge)


def _record(target: str, out: str, *, calls: int, seed: int, capacity: int, mode: str,
            two_threads: bool, api: str | None, judge: str,
            ) -> tuple[Any, BaseException | None]:
    from policyspec.guard import GuardPolicy
    from policyspec.vllm.manager import emulation, release_for
    from policyspec.vllm.standins.gaps import raise_if_gap
    from policyspec.vllm.traffic import TrafficConfig, drive

    guard = GuardPolicy(capacity, target=target, mode=mode, history=out, api=api, judge=judge)
    release = release_for(guard.api)
    manager = emulation(release)(guard, capacity, release=release)
    touch = TrafficConfig.touch if manager.touches else 0.0
    stopped: BaseException | None = None
    round_ = 0
    try:
        while guard.calls < calls:
            drive(manager, TrafficConfig(seed=seed * 100_003 + round_, requests=200,
                                         two_threads=two_threads, touch=touch),
                  req_context_type=functools.partial(_context, round_))
            round_ += 1
    except Exception as exc:
        raise_if_gap(exc)
        stopped = exc
    finally:
        guard.close()
    return guard, stopped


def _context(round_: int, req_id: str) -> Any:
    """Request ids unique over the rounds (each round numbers its own)."""
    from policyspec.vllm.standins.keys import ReqContext

    return ReqContext(f"{round_}-{req_id}")


def run(args: argparse.Namespace) -> int:
    from policyspec.adapters import TargetError

    if args.calls < 1:
        raise UsageError("--calls must be at least 1")
    started = time.monotonic()
    try:
        guard, stopped = record(args.target, args.out, calls=args.calls, seed=args.seed,
                                capacity=args.capacity, mode=args.mode,
                                two_threads=args.two_threads, api=args.api, judge=args.judge)
    except (ValueError, ImportError, TargetError) as exc:
        raise UsageError(str(exc)) from None
    seconds = time.monotonic() - started
    from policyspec.protocols import emulated
    from policyspec.releases import release_of
    from policyspec.vllm.manager import release_for

    driven = release_of(release_for(guard.api))  # (the manager _record drove)
    print(f"{args.out}: {guard.calls:,} calls of {guard.target_name} in {seconds:.1f} s "
          f"({guard.writer.segment + 1} segment{'s' if guard.writer.segment else ''}), API "
          f"{guard.api} ({emulated(guard.api, manager=False)}) behind vLLM "
          f"{driven.version if driven else release_for(guard.api)}'s manager (emulated)")
    if stopped is not None:
        print(f"stopped: {type(stopped).__name__}: {stopped}", file=sys.stderr)
    if guard.violations:
        first = guard.violations[0]
        print(f"check: {len(guard.violations)} violations online, first {first.requirement} "
              f"at call {first.call:,}")
    return EXIT_FAILS if stopped is not None or guard.violations else EXIT_CONFORMS
