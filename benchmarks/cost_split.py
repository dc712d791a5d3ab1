"""Where a measured piece of work spends its time, by step.

One extra run of the work under ``cProfile``: each function's own time is
charged to the step its source file belongs to (the policy's calls, the
model, drawing actions, the manager's emulation...), and the time of a C
function (a dict or list method, ``random``'s core) to the step of the
Python code that called it. The profiler's clock is process CPU time: with
the wall clock, the time a busy machine keeps the process waiting lands on
whatever system call was running (the watchdog's clock reads, for the fast
engine). The profiler adds a cost to every call, so call-heavy steps come
out larger than they are: the shares explain a missed goal, the
unprofiled figures beside them are the measurement.
"""

from __future__ import annotations

import cProfile
import pstats
import time
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["Step", "format_split", "split_cost"]

Step = tuple[str, tuple[str, ...]]
"""A step's name and the path fragments of its source files (the first
step with a matching fragment takes a file)."""


def _step_of(filename: str, steps: Sequence[Step]) -> str:
    path = filename.replace("\\", "/")
    for name, fragments in steps:
        if any(fragment in path for fragment in fragments):
            return name
    return "other"


def split_cost(work: Callable[[], object], steps: Sequence[Step]) -> dict[str, float]:
    """Each step's share (0 to 1) of ``work``'s profiled time; the steps
    not named are "other"."""
    profile = cProfile.Profile(time.process_time)
    profile.runcall(work)
    stats: dict[Any, Any] = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    totals: dict[str, float] = {name: 0.0 for name, _ in steps}
    totals["other"] = 0.0
    for (filename, _line, _name), (_cc, _nc, own, _cum, callers) in stats.items():
        if filename != "~":
            totals[_step_of(filename, steps)] += own
            continue
        edges = sum(edge[2] for edge in callers.values())
        if edges <= 0:
            totals["other"] += own
            continue
        for (caller_file, _l, _n), edge in callers.items():
            totals[_step_of(caller_file, steps)] += own * edge[2] / edges
    whole = sum(totals.values()) or 1.0
    return {name: seconds / whole for name, seconds in totals.items()}


def format_split(shares: dict[str, float]) -> str:
    """``step 41%, step 30%, ...``, largest first, steps under 0.5% left out."""
    shown = sorted(((share, name) for name, share in shares.items() if share >= 0.005),
                   reverse=True)
    return ", ".join(f"{name} {share:.0%}" for share, name in shown)
