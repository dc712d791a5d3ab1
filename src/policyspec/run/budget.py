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
taken as units (``--budget 5``: a third of quick).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BUDGETS", "Budget", "units_of"]


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


def units_of(budget: str | float) -> float:
    """The work units of a budget name or number (a KeyError for an unknown
    name: options are validated before)."""
    return float(budget) if isinstance(budget, int | float) else BUDGETS[budget].units
