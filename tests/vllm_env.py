"""Tests that need the real vLLM: skipped where its modules do not import,
except under ``POLICYSPEC_REQUIRE_VLLM=1`` (set by .ci/vllm.sh in the venv
it installs vLLM 0.33.0 or 0.34.0 into), where a vLLM that does not import is an error: a CI
step that silently skipped every test would prove nothing.
"""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType

import pytest

from policyspec.vllm import standins

__all__ = ["REQUIRED", "installed_release", "require_vllm"]

REQUIRED = os.environ.get("POLICYSPEC_REQUIRE_VLLM", "") not in ("", "0")


def require_vllm(*modules: str) -> ModuleType:
    """Import the real vLLM and ``modules``; return the ``vllm`` package.
    Skips the calling test module when they do not import (an error instead
    under POLICYSPEC_REQUIRE_VLLM)."""
    problem: str | None = None
    if not standins.vllm_importable():
        problem = "vLLM is not installed"
    else:
        try:
            for name in modules:
                importlib.import_module(name)
        except Exception as exc:  # an install without some dependency, a CUDA-only build, ...
            problem = (
                f"vLLM is installed but {name} does not import: {type(exc).__name__}: {exc}"
            )
    if problem is not None:
        if REQUIRED:
            raise RuntimeError(f"POLICYSPEC_REQUIRE_VLLM is set: {problem}")
        pytest.skip(problem, allow_module_level=True)
    vllm = sys.modules["vllm"]
    assert not standins.is_standin(vllm)
    return vllm


def installed_release(vllm: ModuleType) -> str:
    """The manager release of the installed vLLM (``policyspec.vllm.manager``
    emulates "0.33" and "0.34"): the series of ``vllm.__version__``; a test
    module fails when it is not one policyspec follows."""
    from policyspec.releases import release_of

    version = str(getattr(vllm, "__version__", "unknown"))
    release = release_of(version)
    if release is None:
        raise RuntimeError(f"vLLM {version} is not a release policyspec follows "
                           "(policyspec drift says how it differs)")
    return release.series
