"""The optional ``crosshair`` Hypothesis profile (hypothesis-crosshair).

The single-operation property tests (tests/test_model_contracts.py, and the
refinement properties of tests/test_prove.py) draw one state and one call;
under this profile Hypothesis hands its draws to CrossHair, which explores
them symbolically instead of sampling. It is not the main engine: on the
stateful machine it found nothing plain Hypothesis missed (TOOLS.md).

It needs the optional extra: ``pip install -e '.[crosshair]'``. Load this
module as a pytest plugin so that the profile exists before Hypothesis reads
``--hypothesis-profile``::

    pytest -p policyspec.prove.hypothesis_profile --hypothesis-profile=crosshair \\
        tests/test_model_contracts.py tests/test_prove.py -m "not crosshair"

Without hypothesis-crosshair that command stops at once with a usage error
naming the extra to install (never silently running the plain profile).
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
