"""How a finding moves to a smaller cache capacity, the one mechanism every
engine's findings go through (``finish`` calls ``to_smaller_capacity``;
spec/sizes.md): first the same trace at smaller capacities (cheap, for a
finding made above the run's capacity), then a brief fresh search at a few
small capacities for a fault that needs a full cycle of the cache (ARC).
Every replay counts against the caller's ``tries``; the ``cap`` only stops
early, so the same seed gives the same witness on any machine.
"""

from __future__ import annotations

from dataclasses import dataclass

from policyspec.model.actions import Action
from policyspec.profiles import Profile
from policyspec.run.context import EngineContext, capped
from policyspec.sources.sizes import first_played, peak_keys, smaller_capacities
from policyspec.subject import Subject
from policyspec.witness.minimise import bounded_witness
from policyspec.witness.reproduce import fails_with, failure_of

__all__ = [
    "CAPACITIES", "LONG", "SEARCH_UNITS", "SmallerWitness", "same_trace_smaller",
    "searched_smaller", "to_smaller_capacity",
]

LONG = 25
"""A witness longer than this is worth a search at a smaller capacity."""
CAPACITIES = (8, 16, 4)
"""Capacities searched, in turn, until a witness of at most LONG steps."""
SEARCH_UNITS = 1.0
"""The fast engine's work (run.budget) at each capacity."""



@dataclass(frozen=True)
class SmallerWitness:
    """A finding's witness at a smaller capacity than it was handed over at."""

    trace: tuple[Action, ...]
    capacity: int
    searched: bool
    """True: a shorter witness a fresh search found, minimised there
    already; False: the same trace, replayed at the smaller capacity."""


def to_smaller_capacity(
    subject: Subject,
    profile: Profile,
    trace: tuple[Action, ...],
    capacity: int,
    family: frozenset[str],
    *,
    run_capacity: int,
    tries: int,
    cap: float | None,
) -> tuple[SmallerWitness | None, int]:
    """``trace``, which fails with an id of ``family`` at ``capacity``, at a
    smaller capacity (None: none shows it), and the replays that took (at
    most ``tries``). First, when ``capacity`` is above the run's, the same
    trace at the smallest capacity that still shows it; then, for a trace
    over LONG steps, a shorter witness found afresh below ``capacity``,
    which wins over the first."""
    used = 0
    moved: SmallerWitness | None = None
    if capacity > run_capacity and trace:  # (a measurement has no trace to replay)
        smallest, used = same_trace_smaller(subject, profile, trace, capacity, family,
                                            tries, cap)
        if smallest is not None:
            moved = SmallerWitness(trace, smallest, searched=False)
    if len(trace) > LONG:
        found = searched_smaller(subject, profile, capacity, family, len(trace),
                                 tries - used, cap)
        if found is not None:
            moved = SmallerWitness(found[0], found[1], searched=True)
            used += found[2]
    return moved, used


def same_trace_smaller(
    subject: Subject,
    profile: Profile,
    trace: tuple[Action, ...],
    capacity: int,
    family: frozenset[str],
    tries: int,
    cap: float | None,
) -> tuple[int | None, int]:
    """The smallest capacity below ``capacity`` at which ``trace`` still
    fails with an id of ``family`` (None: none does), trying the most keys
    it holds at once, then each threshold capacity above that, smallest
    first; and the replays made (at most ``tries``). Replayed without a get
    of every key: a large example's trace names hundreds."""
    used = 0

    def fails_at(size: int) -> bool | None:
        nonlocal used
        used += 1
        again = failure_of(subject, profile, size, trace, observe=False,
                           fatal=family.__contains__)
        return True if again is not None and again.requirement in family else None

    shown = first_played(smaller_capacities(capacity, peak_keys(trace)), fails_at, tries, cap)
    return (None if shown is None else shown[0]), used


def searched_smaller(
    subject: Subject,
    profile: Profile,
    capacity: int,
    family: frozenset[str],
    known: int,
    tries: int,
    cap: float | None,
) -> tuple[tuple[Action, ...], int, int] | None:
    """The shortest witness of ``family`` the fast engine finds at one of
    CAPACITIES below ``capacity`` that is shorter than ``known`` steps,
    with its capacity and the replays its minimising used (at most
    ``tries``); None when there is none."""
    # Imported here: the fast engine calls this module for its long runs.
    from policyspec.engines.fast import run_fast
    from policyspec.findings.confirm import confirmed, handed_over

    best: tuple[tuple[Action, ...], int] | None = None
    used = 0
    for small in CAPACITIES:
        if small >= capacity or capped(cap):
            continue
        run = run_fast(EngineContext(subject, profile, SEARCH_UNITS, 0, small, cap=cap))
        # The engine hands over its calls as made: replayed, as the route does.
        replays = [confirmed(subject, profile, small, f)[0] for f in run.findings
                   if handed_over(f)]
        found = [f for f in replays if f.requirement in family and not f.unreproduced]
        if not found:
            continue
        shortest = min(found, key=lambda f: len(f.trace))
        # (The shrinking the engine's budget pays for comes on top.)
        trace, spent = bounded_witness(
            shortest.trace, fails_with(subject, profile, small, family),
            fails_with(subject, profile, small, family, observe=False, threads=False),
            max(0, tries - used) + shortest.replays, cap)
        used += max(0, spent - shortest.replays)
        if len(trace) < min(known, len(best[0]) if best else known):
            best = (trace, small)
        if best is not None and len(best[0]) <= LONG:
            break
    return None if best is None else (best[0], best[1], used)
