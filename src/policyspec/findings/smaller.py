"""A shorter witness at a smaller capacity.

Some faults show only once the cache has been through a full cycle (ARC
adapts its target when a ghost list is hit, and its lists are as long as
the capacity): at the run's capacity of 64 every witness holds a hundred
steps or more, however well it is shrunk, while at capacity 8 the same
fault shows in a dozen. A trace found at 64 cannot simply be replayed at 8
(it holds more keys than fit), so the fast engine searches again, briefly,
at a few small capacities, and the shortest witness of the same fault wins;
the report then names the capacity it runs at (``Finding.capacity``).
"""

from __future__ import annotations

from policyspec.engines.fast import run_fast
from policyspec.model.actions import Action
from policyspec.profiles import Profile
from policyspec.run.context import EngineContext, capped
from policyspec.subject import Subject
from policyspec.witness.minimise import bounded_witness
from policyspec.witness.reproduce import fails_with

__all__ = ["CAPACITIES", "LONG", "SEARCH_UNITS", "smaller_witness"]

LONG = 25
"""A witness longer than this is worth a search at a smaller capacity."""
CAPACITIES = (8, 16, 4)
"""Capacities searched, in turn, until a witness of at most LONG steps."""
SEARCH_UNITS = 1.0
"""The fast engine's work (run.budget) at each capacity."""


def smaller_witness(
    subject: Subject,
    profile: Profile,
    capacity: int,
    family: frozenset[str],
    known: int,
    tries: int,
    cap: float | None,
) -> tuple[tuple[Action, ...], int, int] | None:
    """The shortest witness of ``family`` found at a capacity below
    ``capacity`` that is shorter than ``known`` steps, with its capacity
    and the replays its minimising used (at most ``tries``, until the
    wall-time ``cap``); None when there is none."""
    best: tuple[tuple[Action, ...], int] | None = None
    used = 0
    for small in CAPACITIES:
        if small >= capacity or capped(cap):
            continue
        run = run_fast(EngineContext(subject, profile, SEARCH_UNITS, 0, small, cap=cap))
        found = [f for f in run.findings if f.requirement in family]
        if not found:
            continue
        trace = min((f.trace for f in found), key=len)
        trace, spent = bounded_witness(
            trace, fails_with(subject, profile, small, family),
            fails_with(subject, profile, small, family, observe=False, threads=False),
            max(0, tries - used), cap)
        used += spent
        if len(trace) < min(known, len(best[0]) if best else known):
            best = (trace, small)
        if best is not None and len(best[0]) <= LONG:
            break
    return None if best is None else (best[0], best[1], used)
