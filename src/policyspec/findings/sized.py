"""The witness of a size engine's finding (spec/sizes.md): the engine
shrinks its scenario by size (fill, call length) and hands over the calls of
the smallest one that shows the fault, thousands of stores. The route cuts
those down here: ``minimise.coarse`` for a trace too long to shrink action
by action, then the generic shrinker and small key numbers, each with a
fixed count of replays (the generic minimiser would replay once per key).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from policyspec.model.actions import Action
from policyspec.profiles import Profile
from policyspec.subject import Subject
from policyspec.witness.minimise import coarse, renumbered
from policyspec.witness.reproduce import failure_of
from policyspec.witness.shrink import shrink

__all__ = ["COARSE_MOST", "COARSE_TRIES", "SHRINK_MOST", "SHRINK_TRIES", "SIZES", "sized_witness",
           "with_sizes"]

SIZES = " (at fill "
"""How a size engine's note of the sizes that show its fault starts, at the
end of its message (``engines.size``)."""

SHRINK_TRIES = 30
"""Replays the generic shrinker may spend on a sized trace of few actions."""
SHRINK_MOST = 400
"""Longest sized trace the generic shrinker is tried on."""
COARSE_TRIES = 80
"""Replays ``minimise.coarse`` may spend on a longer one first."""
COARSE_MOST = 2_000
"""Longest sized trace ``coarse`` is tried on: a replay through ``Lockstep``
grows faster than the trace (the model's state is copied at every step), and
a fault that needs thousands of stores (a ring of 4,096) keeps them anyway."""


def sized_witness(
    subject: Subject, profile: Profile, capacity: int, trace: Sequence[Action],
    requirement: str, answered: Collection[int], cap: float | None,
) -> tuple[Action, ...]:
    """``trace``, which breaks ``requirement`` at ``capacity``, cut down while
    it still does (``answered``: the keys the failing call answered with,
    whose lives ``coarse`` tries keeping first; ``cap``: a wall-time
    instant no replay starts after)."""

    def fails(candidate: Sequence[Action]) -> bool:
        again = failure_of(subject, profile, capacity, candidate, observe=False,
                           fatal=lambda r: r == requirement)
        return again is not None and again.requirement == requirement

    final = tuple(trace)
    if SHRINK_MOST < len(final) <= COARSE_MOST:
        final = coarse(final, fails, COARSE_TRIES, cap, keep=answered)
    if len(final) <= SHRINK_MOST:
        final = tuple(shrink(final, fails, max_tries=SHRINK_TRIES))
    if len(final) <= SHRINK_MOST:
        small_keys = renumbered(final)
        if small_keys != final and fails(small_keys):
            final = small_keys
    return final


def with_sizes(message: str, noted: str) -> str:
    """``message`` with the size engine's note ``noted`` ends with, if any:
    a message worded again by a replay keeps the sizes that show it."""
    _, note, tail = noted.rpartition(SIZES)
    return message + (SIZES + tail if note else "")
