"""``python -m benchmarks.trace_speed TRACE``: how fast ``policyspec
simulate`` plays a serving trace.

1. The grid: the whole trace at three cache sizes (default 10,000, 30,000
   and 100,000 blocks) through the reference LRU and ARC of vLLM 0.33.0 and
   one adaptive policy of tests/correct/ (slru.py, vLLM PR #38984's design), nine cells on
   ``--jobs`` worker processes (default 2), as ``policyspec simulate`` runs
   them. The figure is the grid's wall time; target: at most 30 s on an
   idle 2-core machine for Mooncake's conversation trace (12,031 requests).
2. Calls per CPU second: for each policy, the policy calls of a play of the
   first ``--replay-requests`` requests at the middle size, as simulate
   makes them (the player, the emulated manager and the timing around each
   call included), beside raw replay of the very same calls: recorded
   once with the manager's ``ref_cnt`` writes (``benchmarks.history``'s
   capture), then bound to a fresh policy and run in a tight loop
   (``benchmarks.history.replay_split``), median of ``--repeats``.

Give the path of a user's copy of the trace (``FAST25-release/traces/
conversation_trace.jsonl`` of kvcache-ai/Mooncake); without one the
bundled sample is played (at 256, 1,024 and 4,096 blocks), which says only
that the benchmark runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from itertools import islice
from pathlib import Path
from typing import Any

ADAPTIVE = "tests/correct/slru.py:Policy"


def grid_seconds(trace: str, sizes: list[int], jobs: int, adaptive: str,
                 requests: int | None) -> tuple[float, Any]:
    """Wall seconds of the whole grid, and its campaign."""
    from policyspec.workload.player import Timing
    from policyspec.workload.simulate import Campaign, describe_trace, policies_for, run_cells

    chosen = policies_for(adaptive)
    campaign = Campaign([describe_trace(trace, requests)], sizes, [p for p, _ in chosen],
                        Timing(), 1, requests, (1, 1), [])
    started = time.perf_counter()
    run_cells(campaign, {p.label: s for p, s in chosen}, jobs=jobs)
    return time.perf_counter() - started, campaign


def calls_per_second(trace: str, size: int, requests: int, repeats: int, adaptive: str
                     ) -> list[tuple[str, int, float, float]]:
    """(policy, calls, simulate's calls per CPU second, raw replay's)."""
    from benchmarks.history import _Capture, replay_split
    from policyspec.vllm import standins
    from policyspec.workload.measure import TimedPolicy
    from policyspec.workload.player import Player, manager_class
    from policyspec.workload.ports import Chunk, driven_policy
    from policyspec.workload.reader import read_trace
    from policyspec.workload.simulate import policies_for

    rows = []
    played = list(islice(read_trace(trace), requests))
    with standins.installed():
        for entry, subject in policies_for(adaptive):
            simulated = []
            calls = 0
            for _ in range(repeats):
                timed = TimedPolicy(driven_policy(subject, size))
                manager = manager_class(subject.api)(timed, size, chunk_type=Chunk)
                started = time.process_time()
                Player(manager, played).run()
                seconds = time.process_time() - started
                calls = timed.total().count
                simulated.append(calls / seconds)
            capture = _Capture(driven_policy(subject, size))
            manager = manager_class(subject.api)(capture, size, chunk_type=Chunk,
                                                 listener=capture)
            Player(manager, played).run()
            log = capture.trace
            raw = []
            for _ in range(repeats):
                seconds, _ = replay_split(lambda s=subject: driven_policy(s, size), log)
                raw.append(calls / seconds)
            rows.append((entry.label, calls, statistics.median(simulated), statistics.median(raw)))
    return rows


def main(argv: list[str] | None = None) -> int:
    from policyspec.workload.sample import sample_path

    parser = argparse.ArgumentParser(prog="python -m benchmarks.trace_speed")
    parser.add_argument("trace", nargs="?", help="Mooncake's conversation_trace.jsonl (default: "
                        "the bundled sample)")
    parser.add_argument("--capacity", type=int, action="append", dest="sizes",
                        help="cache sizes (default 10,000, 30,000, 100,000)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--replay-requests", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-grid", action="store_true")
    parser.add_argument("--requests", type=int, default=None,
                        help="the grid plays only the first N requests (a smoke run)")
    parser.add_argument("--adaptive", default=ADAPTIVE,
                        help=f"the adaptive policy beside the references (default {ADAPTIVE})")
    args = parser.parse_args(argv)
    trace = args.trace or str(sample_path())
    sizes = sorted(args.sizes or ([10_000, 30_000, 100_000] if args.trace else [256, 1024, 4096]))
    print(f"policyspec simulate speed, {Path(trace).name}, sizes "
          f"{', '.join(f'{s:,}' for s in sizes)}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f} at the start", flush=True)
    if not args.skip_grid:
        seconds, campaign = grid_seconds(trace, sizes, args.jobs, args.adaptive, args.requests)
        cells = campaign.cells
        print(f"1. the grid: {len(cells)} cells ({campaign.traces[0].requests:,} requests, "
              f"{campaign.traces[0].blocks:,} blocks each) in {seconds:.1f} s wall on "
              f"{args.jobs} processes (target: <= 30 s idle, 2 cores); load average "
              f"{os.getloadavg()[0]:.1f}")
        for cell in cells:
            print(f"   {cell.policy:<22} {cell.capacity:>9,}  hit rate {cell.hit_rate:7.2%}  "
                  f"{cell.policy_calls:>10,} calls  cell CPU "
                  f"{cell.times['cell_cpu_seconds']:6.2f} s, policy calls (wall) "
                  f"{cell.times['policy_seconds']:6.2f} s")
    middle = sizes[len(sizes) // 2]
    print(f"2. calls per CPU second at {middle:,} blocks, the first {args.replay_requests:,} "
          f"requests, median of {args.repeats}: simulate (player, emulated manager, timing) "
          "against raw replay of the same calls", flush=True)
    for label, calls, simulated, raw in calls_per_second(trace, middle, args.replay_requests,
                                                         args.repeats, args.adaptive):
        print(f"   {label:<22} {calls:>9,} calls  simulate {simulated:>10,.0f}/s  raw "
              f"{raw:>10,.0f}/s  ratio {simulated / raw:.2f}")
    print(f"(load average {os.getloadavg()[0]:.1f} at the end)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
