"""The sizes the random engines draw: from tiny to production-like, with the
thresholds implementations switch at (spec/sizes.md). A fault behind a size
threshold never shows in a small cache driven with short calls, so size is
a dimension of every random engine. Each tuple lists sizes small first,
so that Hypothesis, which shrinks a choice towards the first element,
shrinks a size fault to the smallest size that still shows it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from policyspec.run.context import capped

__all__ = [
    "CAPACITIES", "FAST_LONG_CAPACITY", "FILL_MOST", "LENGTHS", "STEEP_MOST", "THRESHOLDS",
    "first_played", "peak_keys", "played_capacities", "sizes_up_to", "smaller_capacities",
]

T = TypeVar("T")

THRESHOLDS = (63, 64, 65, 127, 128, 129, 255, 256, 257, 1000, 1001, 1023, 1024, 1025,
              4095, 4096, 4097)
"""Powers of two and round numbers with their neighbours: where a policy's
code commonly changes path (vLLM 0.33's LRU rebuilds its heap when at
least max(64, idle / 4) keys change; CPython caches ints up to 256)."""

CAPACITIES = (63, 64, 65, 127, 128, 129, 255, 256, 257, 1023, 1024, 1025, 4095, 4096, 4097,
              10_000)
"""The capacities the Hypothesis engines draw for their large examples."""

LENGTHS = THRESHOLDS
"""Lengths of the long calls (touch lists, hook key lists, protected sets,
evict's n) of a large example."""

FILL_MOST = 600
"""Most keys a Hypothesis example holds at once: the lockstep harness checks
every block after every call, so filling a cache costs the square of its
keys (measured: benchmarks/results.txt); capacities beyond it, and
calls of thousands of keys (mostly keys not stored), still run. Longer
fills are the fast engine's long runs and the size engine's."""

FAST_LONG_CAPACITY = 100_000
"""The capacity of the fast engine's long runs: a CPU tier of 10^5 chunks."""
STEEP_MOST = 1_100
"""The largest size of a scenario for a policy superlinear in a call's
length: a rescan per victim at this size costs about what a linear policy
pays at 10^5 keys, so the scenarios still cross the thresholds up to 1,024
while each call's work stays bounded by the same count on every machine
(at production sizes one such call takes seconds, and whether it crossed
the call time limit depended on the machine's speed)."""


def sizes_up_to(sizes: Sequence[int], most: int) -> list[int]:
    """The sizes of ``sizes`` that are at most ``most`` (``[most]`` when
    none is, and ``most`` is positive)."""
    fit = [size for size in sizes if size <= most]
    return fit or ([most] if most > 0 else [])


def smaller_capacities(found: int, peak: int) -> list[int]:
    """Capacities to try a witness at, smallest first: the most keys it
    holds at once (``peak``), then the threshold capacities between it and
    the capacity it was found at."""
    out = [peak] if 0 < peak < found else []
    out += [c for c in CAPACITIES if peak < c < found]
    return out


def peak_keys(trace: Sequence[tuple[object, ...]]) -> int:
    """At most how many keys ``trace`` holds at once, bounded from below
    (an eviction counts as taking all ``n`` it asked for, which it may not
    have): capacities below it cannot replay the trace, so they are not
    tried. Any count it misses only costs a replay."""
    present: set[object] = set()
    evicted = peak = 0
    for action in trace:
        op = action[0]
        if op == "insert":
            present.add(action[1])
        elif op == "remove":
            present.discard(action[1])
        elif op == "clear":
            present.clear()
            evicted = 0
        elif op == "evict":
            n = action[1]
            evicted += n if isinstance(n, int) else 0
        peak = max(peak, len(present) - evicted)
    return peak


def played_capacities(found: int, first: Iterable[int]) -> list[int]:
    """The capacities below ``found`` an example is played again at, each
    once: ``first`` (the engine's ordinary capacities, where a witness is
    shortest), then the threshold capacities, smallest first."""
    out: list[int] = []
    for size in (*first, *CAPACITIES):
        if size < found and size not in out:
            out.append(size)
    return out


def first_played(
    sizes: Iterable[int], play: Callable[[int], T | None], tries: int | None = None,
    cap: float | None = None,
) -> tuple[int, T] | None:
    """The first of ``sizes`` at which ``play`` shows the fault (what it
    returned, not None), with that size; None when none does within
    ``tries`` plays (None: no bound) or before the wall-time ``cap``. An
    engine whose trace is too large to judge plays its example again from
    its seed at ``played_capacities``; ``same_trace_smaller`` replays one
    trace."""
    for count, size in enumerate(sizes):
        if capped(cap) or (tries is not None and count >= tries):
            return None
        shown = play(size)
        if shown is not None:
            return size, shown
    return None
