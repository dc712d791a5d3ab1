"""``python -m benchmarks.step_calls [TRACE]``: how many policy calls one
serving step makes, counted (never timed) by playing a trace through the
emulated manager of vLLM 0.33.0 around the guard (record mode) and its
in-tree LRU, at each batch size asked for (``--batch``: the requests that
may run at once, vLLM's ``max_num_seqs``).

A per-call cost alone does not say what the guard costs a server: that
needs the calls per step. The traffic player (``policyspec.workload``)
has no steps of its own; it decodes one token per running request every
``decode_ms_per_token`` of trace time, as one decode step of the whole
batch does. So the steps of a play are the trace time during which at
least one request runs, divided by that step time, and the calls per step
are the guard's count of calls divided by the steps. Beside them: the
batch the trace actually reached (the mean of the requests running,
weighted by time, and the most at once), since a trace whose arrivals
are sparse never fills a large ``--batch``; ``--denser F`` plays the same
requests with their arrival times divided by F, to reach a larger batch.

Counts only: the figures depend on the trace, the batch and the player's
timing model, never on the machine or its load.
"""

from __future__ import annotations

import argparse
import tempfile
from dataclasses import dataclass, replace
from itertools import islice
from pathlib import Path
from typing import Any

__all__ = ["StepCounts", "count_steps", "main"]

TARGET = "policyspec.reference.lru033:LRU033CachePolicy"
"""vLLM 0.33.0's in-tree LRU as policyspec models it (the guard's target)."""


@dataclass(frozen=True)
class StepCounts:
    """What one play counted."""

    batch: int
    """The requests allowed to run at once (``Timing.max_running``)."""
    requests: int
    calls: int
    """Policy calls, the guard's count."""
    steps: float
    """Decode steps: busy trace time over the decode time of one token."""
    mean_running: float
    """Requests running, averaged over the busy trace time."""
    most_running: int

    @property
    def calls_per_step(self) -> float:
        return self.calls / self.steps if self.steps else 0.0


class _Busy:
    """Integrates the requests running over the play's trace time: called
    after every event, it charges the interval since the last event to the
    count of requests running through it."""

    def __init__(self, player: Any) -> None:
        self.player = player
        self.last_us = 0
        self.last_running = 0
        self.busy_us = 0
        self.running_us = 0

    def __call__(self) -> None:
        now = self.player.now_us
        if self.last_running:
            self.busy_us += now - self.last_us
            self.running_us += (now - self.last_us) * self.last_running
        self.last_us, self.last_running = now, len(self.player.running)


def count_steps(requests: list[Any], capacity: int, batch: int) -> StepCounts:
    """Play ``requests`` once at ``batch`` (module doc) and count."""
    from policyspec.adapters import installed

    with installed():  # the vLLM stand-ins, when vLLM is missing
        return _count(requests, capacity, batch)


def _count(requests: list[Any], capacity: int, batch: int) -> StepCounts:
    from policyspec.guard import GuardPolicy
    from policyspec.vllm.manager import OffloadingManagerEmulation
    from policyspec.workload.player import Player, Timing

    timing = Timing(max_running=batch)
    with tempfile.TemporaryDirectory(prefix="policyspec-step-calls-") as tmp:
        guard = GuardPolicy(capacity, target=TARGET, mode="record",
                            history=Path(tmp) / "history.jsonl", api="R9")
        try:
            manager = OffloadingManagerEmulation(guard, capacity, release="0.33")
            player = Player(manager, requests, timing=timing)
            busy = _Busy(player)
            player.after_event = busy
            counts = player.run()
        finally:
            guard.close()
    decode_us = timing.decode_ms_per_token * 1000.0
    return StepCounts(
        batch=batch, requests=counts.requests, calls=guard.calls,
        steps=busy.busy_us / decode_us,
        mean_running=busy.running_us / busy.busy_us if busy.busy_us else 0.0,
        most_running=counts.most_running,
    )


def main(argv: list[str] | None = None) -> int:
    from policyspec.workload.player import Timing
    from policyspec.workload.reader import read_trace
    from policyspec.workload.sample import sample_path

    parser = argparse.ArgumentParser(prog="python -m benchmarks.step_calls",
                                     description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("trace", nargs="?", help="a trace (default: the bundled sample)")
    parser.add_argument("--capacity", type=int, default=None,
                        help="cache size in blocks (default 10,000; 1,024 for the sample, "
                        "as benchmarks.trace_guard)")
    parser.add_argument("--requests", type=int, default=None, help="only the first N requests")
    parser.add_argument("--batch", type=int, action="append", default=None, metavar="N",
                        help="requests running at once at most (repeatable; default 32 "
                        "and 256, vLLM's max_num_seqs default)")
    parser.add_argument("--denser", type=float, default=1.0, metavar="F",
                        help="divide every arrival time by F (default 1: the trace's own)")
    args = parser.parse_args(argv)
    if not args.denser > 0:
        parser.error(f"--denser must be > 0, got {args.denser}")
    path = args.trace or str(sample_path())
    capacity = args.capacity or (10_000 if args.trace else 1024)
    requests = [replace(r, arrival_ms=r.arrival_ms / args.denser)
                for r in islice(read_trace(path), args.requests)]
    decode_ms = Timing().decode_ms_per_token
    print(f"policy calls per serving step, {Path(path).name}: {len(requests):,} requests, "
          f"capacity {capacity:,}"
          + (f", arrivals {args.denser:g} times as dense" if args.denser != 1 else "")
          + "; vLLM 0.33.0's manager (emulated) around the guard "
          f"(record mode) and its in-tree LRU; one decode step per {decode_ms:g} ms of "
          "trace time while a request runs")
    for batch in args.batch or [32, 256]:
        found = count_steps(requests, capacity, batch)
        print(f"   batch <= {batch:>4}: {found.calls:>9,} policy calls in {found.steps:>9,.0f} "
              f"steps = {found.calls_per_step:6.1f} calls per step (requests running: mean "
              f"{found.mean_running:.1f}, most {found.most_running})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
