"""What the policy's environment costs (policyspec.environment):
a virtual clock and a random stream put in place around policy
calls, and clock functions that tell a policy's reads from policyspec's.

Three figures, each the fastest of ``repeats`` runs in process CPU time,
the runs with and without taken in turn (on a shared machine the speed
drifts between minutes; the fastest run is the least disturbed):

1. the fast engine (millions of calls, the environment in place per chunk
   of calls) on the reference LRU: a fixed number of examples with the
   environment, against the same examples with an environment that does
   nothing; the overhead in percent;
2. the lockstep harness (the environment in place around every call):
   a fixed trace replayed with and without it; the overhead per call;
3. one clock read: the real ``time.monotonic``, the installed function
   outside a policy call, and inside one (a policy's read, answered from
   the virtual clock).

``python -m benchmarks.environment`` prints them (``--repeats``); the
figures go to benchmarks/results.txt with the machine's load beside them.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import replace
from time import process_time

from policyspec.engines.fast import run_fast
from policyspec.environment import LocalEnvironment, active, controlled
from policyspec.harness import Lockstep
from policyspec.profiles import get_profile
from policyspec.reference import LRUCachePolicy
from policyspec.run.context import EngineContext
from policyspec.subject import Subject, subject_from_class

__all__ = ["NoEnvironment", "clock_reads", "fast_overhead", "lockstep_overhead", "main"]


class NoEnvironment:
    """An environment that does nothing: the baseline."""

    read_clock = False
    read_wall_after_back = False

    def step(self, ms: int) -> None:
        return None

    def enter(self) -> object:
        return None

    def leave(self, outer: object) -> None:
        return None


def _subjects() -> tuple[Subject, Subject]:
    subject = subject_from_class(LRUCachePolicy)
    return subject, replace(subject, environment=NoEnvironment)


def _cpu(work: Callable[[], object], repeats: int) -> float:
    return min(_alternate([work], repeats)[0])


def _alternate(works: list[Callable[[], object]], repeats: int) -> list[list[float]]:
    """CPU seconds of each of ``works``, ``repeats`` times, taken in turn."""
    times: list[list[float]] = [[] for _ in works]
    for _ in range(repeats):
        for work, spent in zip(works, times, strict=True):
            start = process_time()
            work()
            spent.append(process_time() - start)
    return times


def fast_overhead(examples: int = 200, repeats: int = 10) -> tuple[float, float, int]:
    """CPU seconds of the fast engine's ``examples`` examples with the
    environment and without, and the checked calls of one run."""
    with_env, without = _subjects()
    core = get_profile("core")
    calls = run_fast(EngineContext(with_env, core, 60.0, 0, 64, count=examples,
                                   capacity_fixed=True)).calls
    with controlled(0):
        timed, base = _alternate([
            lambda: run_fast(EngineContext(with_env, core, 60.0, 0, 64, count=examples,
                                           capacity_fixed=True)),
            lambda: run_fast(EngineContext(without, core, 60.0, 0, 64, count=examples,
                                           capacity_fixed=True)),
        ], repeats)
    return min(timed), min(base), calls


TRACE = [("insert", k % 48, -1) if k < 48 else ("touch", (k % 48, (k * 7) % 48))
         for k in range(400)]


def lockstep_overhead(repeats: int = 10) -> tuple[float, float, int]:
    """CPU seconds of replaying TRACE in lockstep with the environment and
    without, and the policy calls of one replay."""
    with_env, without = _subjects()
    core = get_profile("core")

    def replay(subject: Subject) -> int:
        harness = Lockstep(subject, core, 64)
        harness.run(TRACE)
        return harness.calls

    calls = replay(with_env)
    with controlled(0):
        timed, base = _alternate([lambda: replay(with_env), lambda: replay(without)], repeats)
    return min(timed), min(base), calls


def clock_reads(reads: int = 200_000, repeats: int = 5) -> tuple[float, float, float]:
    """Nanoseconds per ``time.monotonic()``: the real function; installed,
    outside a policy call; installed, inside one (a policy's read)."""
    real = time.monotonic

    def loop(read: Callable[[], float]) -> Callable[[], None]:
        def run() -> None:
            for _ in range(reads):
                read()
        return run

    def per_read(seconds: float) -> float:
        return seconds / reads * 1e9

    plain = per_read(_cpu(loop(real), repeats))
    with controlled(0):
        outside = per_read(_cpu(loop(time.monotonic), repeats))
        with active(LocalEnvironment(0)):
            inside = per_read(_cpu(loop(time.monotonic), repeats))
    return plain, outside, inside


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.environment")
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args(argv)
    load = _load()
    timed, base, calls = fast_overhead(repeats=args.repeats)
    print(f"fast engine, 200 examples, reference LRU, core ({calls:,} checked calls): "
          f"{timed:.3f} s CPU with the environment, {base:.3f} s without "
          f"({(timed / base - 1) * 100:+.1f} %), load {load}")
    timed, base, calls = lockstep_overhead(repeats=args.repeats)
    print(f"lockstep replay of {len(TRACE)} actions ({calls:,} calls): {timed * 1e3:.1f} ms CPU "
          f"with the environment, {base * 1e3:.1f} ms without "
          f"({(timed - base) / calls * 1e9:+.0f} ns per call)")
    plain, outside, inside = clock_reads(repeats=args.repeats)
    print(f"time.monotonic(): {plain:.0f} ns real, {outside:.0f} ns installed outside a policy "
          f"call, {inside:.0f} ns inside one (the virtual clock)")
    return 0


def _load() -> str:
    """The one-minute load average (``/proc/loadavg``), or "?"."""
    try:
        with open("/proc/loadavg", encoding="ascii") as handle:
            return handle.read().split()[0]
    except OSError:
        return "?"


if __name__ == "__main__":
    raise SystemExit(main())
