"""What the manager's second thread costs (API-ANY-THREAD): the lockstep
harness hands one action in ``THREAD_EVERY`` to a second thread and waits
for it, and each hand-over is two thread wake-ups.

The request-memory engine (the heaviest user of the harness: every call in
lockstep with the model) runs the same examples on the request-ranked
reference LRU with the hand-over on every other action (the old setting),
on one action in ``THREAD_EVERY``, and never; the settings are taken in
turn, ``repeats`` times, and each prints the median wall time and CPU
time. Wall time is what a hand-over costs (a sleeping thread's wake-up is
not CPU), so take the figures on an idle machine.

``python -m benchmarks.second_thread`` prints them (``--repeats``,
``--units``); the figures go to benchmarks/results.txt.
"""

from __future__ import annotations

import argparse
import statistics
import time

from policyspec.adapters import subject_for_class
from policyspec.engines.arc_memory import run_arc_memory
from policyspec.harness import lockstep
from policyspec.profiles import get_profile
from policyspec.reference import LRU033CachePolicy
from policyspec.run.context import EngineContext

__all__ = ["main", "measure"]

NEVER = 10**9
"""A hand-over period no run reaches: every action on the caller's thread."""


def measure(every: int, units: float) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and checked calls of one request-memory run
    with one action in ``every`` on the second thread."""
    profile = get_profile("lru-0.33")
    subject = subject_for_class(LRU033CachePolicy).fitted(profile.api)
    saved, lockstep.THREAD_EVERY = lockstep.THREAD_EVERY, every
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        run = run_arc_memory(EngineContext(subject, profile, units, 0, 64, capacity_fixed=True),
                             ranked=True, engine="request-memory")
        if run.findings or run.error:
            raise RuntimeError(f"the reference failed: {run.error or run.findings[0]}")
        return time.perf_counter() - wall, time.process_time() - cpu, run.calls
    finally:
        lockstep.THREAD_EVERY = saved


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.second_thread")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--units", type=float, default=0.5)
    args = parser.parse_args()
    settings = {"every other action": 2, f"one in {lockstep.THREAD_EVERY}":
                lockstep.THREAD_EVERY, "never": NEVER}
    runs: dict[str, list[tuple[float, float, int]]] = {name: [] for name in settings}
    for _ in range(args.repeats):
        for name, every in settings.items():
            runs[name].append(measure(every, args.units))
    print(f"request-memory on the request-ranked reference LRU, capacity 64, {args.units:g} "
          f"work units, median of {args.repeats} runs taken in turn")
    never = statistics.median(wall for wall, _, _ in runs["never"])
    for name, measured in runs.items():
        wall = statistics.median(w for w, _, _ in measured)
        cpu = statistics.median(c for _, c, _ in measured)
        print(f"  second thread {name:<20} {wall:6.2f} s wall {cpu:6.2f} s CPU "
              f"{measured[0][2]:>9,} calls  {wall / never:5.2f}x the wall of never")


if __name__ == "__main__":
    main()
