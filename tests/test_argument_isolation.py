"""The engines' data are their own: what a policy does
to the containers it is given never reaches the engines' generation or
their replays, in the checker's process or behind ``--isolate``; a run that
found a MUST failure ends in FAIL, with any engine error beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from policyspec.options import CheckOptions
from policyspec.session import check_target

FAULTY = Path(__file__).parent / "faulty"


@pytest.mark.parametrize("isolate", [False, True], ids=["in-process", "isolated"])
def test_a_policy_that_empties_protected_fails_both_ids_without_an_engine_error(
        isolate: bool) -> None:
    # The two Hypothesis engines (they replay what they generate, and gave
    # FlakyStrategyDefinition here) and the fast engine.
    options = CheckOptions(budget=4.0, seed=7, jobs=1, isolate=isolate,
                           engines=("stateful", "manager", "fast"))
    report = check_target(f"{FAULTY / 'evict_empties_protected.py'}:Policy", "core", options)
    assert report.errors == []
    assert report.verdict == "fail"
    assert {"API-ARGS-UNCHANGED", "EVICT-UNPROTECTED"} <= {f.requirement
                                                         for f in report.failures}


def test_a_policy_given_copies_under_isolate_gets_the_shape_the_harness_passed() -> None:
    """The child gets the container of the shape the harness handed over (a
    frozenset here), so a witness found there replays in this process: the
    1-step witness of API-ARGS-UNCHANGED passes a set, the only shape the
    policy empties."""
    options = CheckOptions(budget=3.0, seed=7, jobs=1, isolate=True, engines=("stateful",))
    report = check_target(f"{FAULTY / 'evict_empties_protected.py'}:Policy", "core", options)
    [failure] = [f for f in report.failures if f.requirement == "API-ARGS-UNCHANGED"]
    assert failure.trace[-1].endswith("as a set)"), failure.trace
