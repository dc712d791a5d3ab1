"""Budgets: how much work a check does, named or as a number.

A budget is a number of *work units*: one unit is the work the engines do
in about a second of wall time on an idle 2-core machine checking the
reference LRU with ``--jobs 2`` (benchmarks/results.txt, budgets, has the
calibration). Each engine turns its share of the units into a count of
examples (or scenarios, sessions, runs) with a rate of its own
(``EngineContext.examples``), derived from the seed and nothing else, so a
budget is the same work everywhere: a slow policy, a busy machine or
``--jobs 1`` take longer, never do less.

``quick``, ``standard`` and ``deep`` are 15, 50 and 240 units; a number is
taken as units (``--budget 5``: a third of quick). A policy in another
process (``--exec``, ``--isolate``) pays a pipe round trip per call, an
order of magnitude more than a call in this process: it gets ``PIPE_SCALE``
of the units (``Subject.work_scale``), so that quick stays quick. The scale
is a property of the target, never of the machine.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BUDGETS", "PIPE_SCALE", "Budget", "units_of"]


@dataclass(frozen=True)
class Budget:
    name: str
    units: float
    """Work units the engines share (module doc)."""


BUDGETS = {
    "quick": Budget("quick", 15.0),
    "standard": Budget("standard", 50.0),
    "deep": Budget("deep", 240.0),
}


PIPE_SCALE = 1 / 16
"""The share of a budget's units for a policy whose calls cross a pipe
(module doc; benchmarks/results.txt, budgets, has the rates)."""


def units_of(budget: str | float) -> float:
    """The work units of a budget name or number (a KeyError for an unknown
    name: options are validated before)."""
    return float(budget) if isinstance(budget, int | float) else BUDGETS[budget].units
