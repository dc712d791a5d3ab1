"""What each ``--budget`` of ``policyspec check`` covers on the reference LRU.

One run per budget (they are long): wall seconds, checked calls, caller
actions (steps) and examples, in total and per engine, as ``policyspec check
--profile lru`` reports them in its JSON ``stats``, with the CLI's default
``--jobs`` (every core): the budgets are calibrated for that run, so the
seconds are a user's. Target: the standard budget covers at least 1,000,000
checked calls.
"""

from __future__ import annotations

from typing import Any

from policyspec.options import CheckOptions
from policyspec.profiles import get_profile
from policyspec.reference import LRUCachePolicy
from policyspec.run.budget import units_of
from policyspec.session import run_check
from policyspec.subject import subject_from_class

__all__ = ["measure_budget"]


def measure_budget(name: str | float) -> dict[str, Any]:
    """The stats of one ``run_check`` with budget ``name`` (a name or work
    units: the short runs use a few units), plus its verdict."""
    report = run_check(subject_from_class(LRUCachePolicy), get_profile("lru"),
                       options=CheckOptions(budget=name))  # jobs: every core, as the CLI
    stats = dict(report.stats)
    stats["budget_units"] = units_of(name)
    stats["verdict"] = report.verdict
    return stats
