"""The optional ``crosshair`` Hypothesis profile (hypothesis-crosshair), for
the single-operation property tests: Hypothesis hands its draws to
CrossHair, which explores them symbolically instead of sampling
(spec/prove.md, "Hypothesis under CrossHair"). Load it as a pytest plugin
(``-p policyspec.prove.hypothesis_profile``) so that the profile exists
before Hypothesis reads ``--hypothesis-profile``; without the extra it
stops at once with a usage error, never silently running the plain profile.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

__all__ = ["PROFILE", "available", "pytest_configure", "register"]

PROFILE = "crosshair"


def available() -> bool:
    """hypothesis-crosshair is installed."""
    return importlib.util.find_spec("hypothesis_crosshair_provider") is not None


def register() -> bool:
    """Register the profile when the backend is installed; True if it was."""
    if not available():
        return False
    settings.register_profile(
        PROFILE,
        backend="crosshair",
        deadline=None,
        max_examples=200,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    return True


register()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: Any) -> None:
    """Fail fast, before Hypothesis's own plugin, when the profile is asked
    for and the backend is missing."""
    try:
        wanted = config.getoption("--hypothesis-profile")
    except ValueError:  # Hypothesis's pytest plugin is not loaded
        return
    if wanted == PROFILE and not available():
        raise pytest.UsageError(
            "the crosshair profile needs hypothesis-crosshair: pip install -e '.[crosshair]'"
        )
