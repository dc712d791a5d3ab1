"""``python -m benchmarks.trace_speed --trace FILE``: how fast ``policyspec
simulate`` plays a serving trace.

1. The grid: ``policyspec simulate tests/correct/slru.py:Policy --trace
   FILE`` at three cache sizes (default 10,000, 30,000 and 100,000 blocks):
   the adaptive policy of tests/correct/ (slru.py, vLLM PR #38984's design)
   and the reference LRU and ARC of vLLM 0.33.0, nine cells on ``--jobs``
   worker processes (default 2), the command run as a user runs it, in a
   process of its own. The figure is the command's wall time, the median of
   ``--repeats`` runs; goal: at most 30 s on an idle 2-core machine for
   Mooncake's conversation trace (12,031 requests). Its split, from the
   command's own report: the cells' CPU time, of it the policy calls (as
   simulate times them) and the rest (the player, the emulated manager),
   and what is left of ``jobs`` cores over the wall time (start-up, the
   check of the whole trace, the reports, a core left idle).
2. Calls per CPU second: for each policy, a simulate cell (the very code
   ``policyspec simulate`` runs for one cell: the player, the emulated
   manager, the timing around each call) on the first ``--replay-requests``
   requests at the middle size, beside raw replay of the very same calls:
   recorded from a play of the same requests with the manager's
   ``ref_cnt`` writes (``benchmarks.history``'s capture), then bound to a
   fresh policy and run in a tight loop (``benchmarks.history.replay_split``).
   The two are taken in turn, ``--repeats`` times; the figures are medians.
   Goal: simulate at 0.8 or more of raw replay. Its split: one profiled
   cell, by step (``benchmarks.cost_split``).

Mooncake's traces are not in this repository (spec/traffic.md); get the
conversation trace with the command in benchmarks/README.md. Without
``--trace`` the bundled synthetic sample is played (at 256, 1,024 and
4,096 blocks), which says only that the benchmark runs.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.cost_split import Step, format_split, split_cost

__all__ = ["ADAPTIVE", "DOWNLOAD", "GridRun", "SimulateSpeed", "TraceMissing", "grid_runs",
           "simulate_speeds", "trace_path"]

ADAPTIVE = "tests/correct/slru.py:Policy"
ROOT = Path(__file__).resolve().parent.parent
DOWNLOAD = ("curl -fLO https://raw.githubusercontent.com/kvcache-ai/Mooncake/main/"
            "FAST25-release/traces/conversation_trace.jsonl")
"""The command that fetches Mooncake's conversation trace (benchmarks/README.md)."""
GOAL_GRID_SECONDS = 30.0
GOAL_SIMULATE_RATIO = 0.8


class TraceMissing(Exception):
    """The trace given does not exist (the message says how to get it)."""


def trace_path(given: str | None) -> tuple[str, bool]:
    """The trace to play and whether it is the user's (False: the bundled
    sample). ``TraceMissing`` when a path is given and is not a file."""
    from policyspec.workload.sample import sample_path

    if given is None:
        return str(sample_path()), False
    if not Path(given).is_file():
        raise TraceMissing(f"no trace at {given}: download Mooncake's conversation trace with "
                           f"`{DOWNLOAD}` (benchmarks/README.md) and pass --trace "
                           "conversation_trace.jsonl")
    return given, True


def default_sizes(users: bool) -> list[int]:
    return [10_000, 30_000, 100_000] if users else [256, 1024, 4096]


@dataclass
class GridRun:
    """One run of the grid command: its wall time and its cells' figures."""

    wall: float
    cells: list[dict[str, Any]]
    jobs: int

    @property
    def cell_cpu(self) -> float:
        return float(sum(c["times"]["cell_cpu_seconds"] for c in self.cells))

    @property
    def policy_seconds(self) -> float:
        return float(sum(c["times"]["policy_seconds"] for c in self.cells))


def grid_runs(trace: str, sizes: list[int], jobs: int, runs: int, adaptive: str = ADAPTIVE,
              requests: int | None = None) -> list[GridRun]:
    """``runs`` runs of ``policyspec simulate ADAPTIVE --trace TRACE`` at
    ``sizes`` with ``--jobs jobs``, each in a process of its own."""
    out = []
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "grid.json"
        command = [sys.executable, "-m", "policyspec", "simulate", adaptive, "--trace", trace,
                   "--jobs", str(jobs), "-q", "--json-report", str(report)]
        command += [arg for size in sizes for arg in ("--capacity", str(size))]
        if requests is not None:
            command += ["--requests", str(requests)]
        for _ in range(runs):
            started = time.perf_counter()
            done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
            wall = time.perf_counter() - started
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(command[1:])} exited {done.returncode}: "
                                   f"{(done.stderr or done.stdout).strip()[-400:]}")
            data = json.loads(report.read_text(encoding="utf-8"))
            out.append(GridRun(wall, list(data["cells"]), jobs))
    return out


def grid_lines(runs: list[GridRun], trace: str, users: bool) -> list[str]:
    """The grid's report: median wall, run count, split, cells of the median run."""
    walls = [run.wall for run in runs]
    middle = sorted(runs, key=lambda run: run.wall)[len(runs) // 2]
    cells = middle.cells
    first = cells[0]
    wall = statistics.median(walls)
    verdict = ("met" if wall <= GOAL_GRID_SECONDS else "missed") if users else "not judged"
    lines = [
        f"   {len(cells)} cells of {first['requests']:,} requests ({first['blocks']:,} blocks) "
        f"from {Path(trace).name}: median {wall:.1f} s wall over {len(runs)} run(s) "
        f"(runs: {', '.join(f'{w:.1f}' for w in walls)}) on {middle.jobs} processes",
        f"   goal: <= {GOAL_GRID_SECONDS:g} s idle on 2 cores for Mooncake's conversation trace: "
        f"{verdict}" + ("" if users else " (the bundled sample, not the goal's trace)"),
    ]
    cores = wall * middle.jobs
    other = max(0.0, cores - middle.cell_cpu)
    rest = middle.cell_cpu - middle.policy_seconds
    lines.append(
        f"   split (the median run, of {cores:.1f} core-seconds = wall x {middle.jobs}): cells' "
        f"CPU {middle.cell_cpu:.1f} s, policy calls {middle.policy_seconds:.1f} s (timed by "
        "simulate on the wall clock), player + emulated manager "
        + (f"{rest:.1f} s" if rest >= 0 else "- (a loaded machine: the calls' wall time "
           "exceeds the cells' CPU)")
        + f"; start-up, the trace's check, reports and idle cores {other:.1f} s")
    for cell in cells:
        times = cell["times"]
        lines.append(f"     {cell['policy']:<22} {cell['capacity']:>9,}  hit rate "
                     f"{cell['hit_rate']:7.2%}  {cell['policy_calls']:>10,} calls  cell CPU "
                     f"{times['cell_cpu_seconds']:6.2f} s, policy calls "
                     f"{times['policy_seconds']:6.2f} s")
    return lines


@dataclass
class SimulateSpeed:
    """A policy's simulate cell against raw replay of its calls."""

    label: str
    calls: int = 0
    simulate: list[float] = field(default_factory=list)
    """Calls per CPU second of the cell, per run."""
    raw: list[float] = field(default_factory=list)
    """Calls per CPU second of raw replay, per run."""
    split: dict[str, float] = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        return statistics.median(s / r for s, r in zip(self.simulate, self.raw, strict=True))


def _steps(subject: Any) -> tuple[Step, ...]:
    """The steps of a simulate cell's cost split; the policy's own file is
    the policy's calls."""
    from policyspec.adapters.seed import unwrap

    policy = unwrap(subject.build(4))
    source = inspect.getsourcefile(type(policy)) or "<policy>"
    return (
        ("policy calls", (source.replace("\\", "/"), "policyspec/reference/")),
        ("emulated manager", ("policyspec/vllm/",)),
        ("player (trace events)", ("workload/player.py",)),
        ("timing around calls", ("workload/measure.py", "histogram")),
        ("adapters (hooks, chunks)", ("workload/ports.py", "policyspec/adapters/")),
        ("reading the trace", ("workload/reader.py", "/json/", "gzip")),
    )


def simulate_speeds(trace: str, size: int, requests: int, repeats: int,
                    adaptive: str = ADAPTIVE) -> list[SimulateSpeed]:
    """For each policy of the grid: a simulate cell of the first
    ``requests`` requests at ``size`` and raw replay of its calls, in turn,
    ``repeats`` times; and the cell's cost split."""
    from benchmarks.history import _Capture, replay_split
    from policyspec.vllm import standins
    from policyspec.workload.player import Player, Timing, manager_class
    from policyspec.workload.ports import Chunk, driven_policy
    from policyspec.workload.reader import read_trace
    from policyspec.workload.simulate import (
        CellKey,
        _context_type,
        _run_cell,
        describe_trace,
        policies_for,
    )

    entry = describe_trace(trace, requests)
    out = []
    with standins.installed():
        for index, (policy, subject) in enumerate(policies_for(adaptive)):
            key = CellKey(index, 0, size, index)
            speed = SimulateSpeed(policy.label)

            def cell(policy: Any = policy, subject: Any = subject, key: CellKey = key) -> Any:
                return _run_cell(key, entry, policy, subject, Timing(), 1, requests)

            capture = _Capture(driven_policy(subject, size))
            manager = manager_class(subject.api)(capture, size, store_threshold=1,
                                                 chunk_type=Chunk, listener=capture)
            played = read_trace(trace)
            Player(manager, (r for _, r in zip(range(requests), played, strict=False)),
                   timing=Timing(), new_context=_context_type()).run()
            log = capture.trace
            recorded = sum(1 for name, _ in log if name)
            for _ in range(repeats):
                started = time.process_time()
                done = cell()
                seconds = time.process_time() - started
                if done.error or done.policy_calls != recorded:
                    raise RuntimeError(f"{policy.label}: the cell made {done.policy_calls} "
                                       f"calls ({done.error or 'no error'}), its recording "
                                       f"{recorded}")
                speed.simulate.append(done.policy_calls / seconds)
                raw, _ = replay_split(partial(driven_policy, subject, size), log)
                speed.raw.append(recorded / raw)
            speed.calls = recorded
            speed.split = split_cost(cell, _steps(subject))
            out.append(speed)
    return out


def simulate_lines(speeds: list[SimulateSpeed]) -> list[str]:
    lines = []
    for speed in speeds:
        ratio = speed.ratio
        verdict = "met" if ratio >= GOAL_SIMULATE_RATIO else "missed"
        lines.append(f"   {speed.label:<22} {speed.calls:>9,} calls  simulate "
                     f"{statistics.median(speed.simulate):>10,.0f}/s  raw "
                     f"{statistics.median(speed.raw):>10,.0f}/s  ratio {ratio:.2f} "
                     f"(goal >= {GOAL_SIMULATE_RATIO:g}: {verdict}; {len(speed.simulate)} runs)")
        lines.append(f"       split: {format_split(speed.split)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.trace_speed",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", metavar="FILE", help="Mooncake's conversation_trace.jsonl "
                        "(default: the bundled sample)")
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
    try:
        trace, users = trace_path(args.trace)
    except TraceMissing as missing:
        print(f"python -m benchmarks.trace_speed: {missing}", file=sys.stderr)
        return 2
    sizes = sorted(args.sizes or default_sizes(users))
    print(f"policyspec simulate speed, {Path(trace).name}, sizes "
          f"{', '.join(f'{s:,}' for s in sizes)}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f} at the start", flush=True)
    if not args.skip_grid:
        print(f"1. the grid: policyspec simulate {args.adaptive} and the in-tree LRU and ARC "
              "(wall clock)", flush=True)
        runs = grid_runs(trace, sizes, args.jobs, args.repeats, args.adaptive, args.requests)
        print("\n".join(grid_lines(runs, trace, users)), flush=True)
    middle = sizes[len(sizes) // 2]
    print(f"2. calls per CPU second at {middle:,} blocks, the first {args.replay_requests:,} "
          f"requests: a simulate cell against raw replay of the same calls", flush=True)
    speeds = simulate_speeds(trace, middle, args.replay_requests, args.repeats, args.adaptive)
    print("\n".join(simulate_lines(speeds)))
    print(f"(load average {os.getloadavg()[0]:.1f} at the end)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
