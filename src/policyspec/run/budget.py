"""Budgets: how much work a check does, named or as a number (spec/check.md).

A budget is a number of work units that each engine turns into a count of
examples from the seed alone, never from a clock, so a budget is the same
work everywhere: a slow policy, a busy machine or ``--jobs 1`` take longer,
never do less. A policy in another process pays a pipe round trip per call,
so it gets a scale of the units: a property of the target, not the machine.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BUDGETS", "PIPE_SCALE", "Budget", "units_of"]


@dataclass(frozen=True)
class Budget:
    name: str
    units: float
    """Work units the engines share (spec/check.md)."""


BUDGETS = {
    "quick": Budget("quick", 15.0),
    "standard": Budget("standard", 50.0),
    "deep": Budget("deep", 240.0),
}


PIPE_SCALE = 1 / 16
"""The share of a budget's units for a policy whose calls cross a pipe
(spec/check.md; benchmarks/results.txt, budgets, has the rates)."""


def units_of(budget: str | float) -> float:
    """The work units of a budget name or number (a KeyError for an unknown
    name: options are validated before)."""
    return float(budget) if isinstance(budget, int | float) else BUDGETS[budget].units
