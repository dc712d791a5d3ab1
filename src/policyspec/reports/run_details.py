"""What each engine's run did, in words, once per engine: the notes ``check
-v`` adds (sizes drawn, states reached, copies run under ``--jobs``).

They are rendered from the run's counts after the copies of an engine are
merged (``workers``), so copies that ran at once give one exact line, never
one line per copy.
"""

from __future__ import annotations

from policyspec.run.result import EngineRun
from policyspec.sources.sizes import FAST_LONG_CAPACITY

__all__ = ["run_details"]

_SCENARIOS = frozenset({"size"})
"""Engines that draw a capacity per scenario rather than per example."""


def run_details(run: EngineRun, capacity: int, fixed: bool) -> list[str]:
    """The ``-v`` notes of ``run`` (merged over its copies) at the check's
    ``capacity``; ``fixed``: ``--capacity`` chose it."""
    counts = run.counts
    lines = list(run.details)
    largest = counts.get("largest_capacity")
    if run.engine in _SCENARIOS and largest is not None:
        how = "fixed" if fixed else "drawn per scenario"
        lines.append(f"scenarios up to a capacity of {largest:,} ({how})")
    elif "sized_examples" in counts and largest is not None:
        lines.append(f"capacities drawn per example: {counts.get('large_examples', 0)} of "
                     f"{counts['sized_examples']} examples above {capacity}, up to "
                     f"{largest:,}")
    elif largest is not None and fixed:
        lines.append(f"every example at capacity {capacity} (fixed)")
    if counts.get("long_runs"):
        lines.append(f"{counts['long_runs']} long runs at capacity {FAST_LONG_CAPACITY:,}, "
                     f"up to {counts.get('largest_keys', 0):,} keys at once")
    samples = counts.get("state_samples", 0)
    if samples:
        lines.append(f"states reached: {counts['state_keys'] / samples:.0f} keys and "
                     f"{counts['state_idle'] / samples:.0f} idle on average (capacity "
                     f"{capacity})")
    if counts.get("time_limits"):
        lines.append(f"{counts['time_limits']} calls ended at the call time limit")
    if counts.get("copies", 1) > 1:
        lines.append(f"{counts['copies']} copies ran at once (--jobs), their counts summed")
    return lines
