"""The bundled references at the quick budget, as each conformance module
checks them when no policy is named (marked slow: .ci/run runs it).

The modules under conformance/ check them at ``REFERENCE_BUDGET`` in the
test command, where each xdist worker makes its own check of each
reference; here each (reference, profile) pair they name gets one whole
check at quick, the budget a user's ``pytest --policy`` gets.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import conformance
from policyspec.run.budget import BUDGETS
from policyspec.session import CheckOptions, check_target
from policyspec.testing import DEFAULT_PROFILE, DEFAULT_TARGET, REFERENCE_BUDGET, ConformanceSuite


def checked_references() -> list[tuple[str, str]]:
    """Every (target, profile) a conformance module checks by default."""
    pairs: set[tuple[str, str]] = set()
    for module in pkgutil.iter_modules(conformance.__path__):
        loaded = importlib.import_module(f"conformance.{module.name}")
        for value in vars(loaded).values():
            if isinstance(value, type) and issubclass(value, ConformanceSuite) and (
                    value is not ConformanceSuite):
                pairs.add((value.default_target or DEFAULT_TARGET,
                           value.default_profile or DEFAULT_PROFILE))
    return sorted(pairs)


REFERENCES = checked_references()


def test_the_conformance_modules_check_each_reference_below_quick() -> None:
    assert len(REFERENCES) >= 4
    assert BUDGETS["quick"].units > REFERENCE_BUDGET  # the slow test below adds work


MAIN_JOB = ("policyspec.reference:LRUCachePolicy", "lru")
"""README's main job checks this pair at the default budget, above quick:
CI runs it there; here it is nightly."""


@pytest.mark.slow
@pytest.mark.parametrize(("target", "profile"), [
    pytest.param(t, p, marks=[pytest.mark.nightly] if (t, p) == MAIN_JOB else [])
    for t, p in REFERENCES], ids=[f"{t.rpartition(':')[2]}-{p}" for t, p in REFERENCES])
def test_each_reference_passes_its_profile_at_quick(target: str, profile: str) -> None:
    report = check_target(target, profile, CheckOptions(budget="quick", seed=0, jobs=1))
    assert not report.errors, report.errors
    assert report.verdict == "pass", [(f.requirement, f.message) for f in report.failures]
