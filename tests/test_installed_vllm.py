"""The installed vLLM's own in-tree LRU and ARC, checked with policyspec:
the LRU under profile lru, the ARC under profile arc, each with the quick
budget and a fixed seed, must pass, and must have run against vLLM's own
modules, not policyspec's stand-ins.

Runs only where vLLM's policy modules import (README, "Checking against an
installed vLLM", gives the commands that install them on a CPU-only
machine); skipped everywhere else, CI included.
"""

from __future__ import annotations

import importlib
import sys

import pytest

from policyspec.adapters import load_subject, standins
from policyspec.check import run_check
from policyspec.profiles import get_profile
from policyspec.report import Report

LRU = "vllm.v1.kv_offload.cpu.policies.lru"
ARC = "vllm.v1.kv_offload.cpu.policies.arc"
OWN_MODULES = "vLLM is installed: the policy ran against its own modules"
SEED = 0


def _vllm_version() -> str:
    """The installed vLLM's version; skips the module when its policies do
    not import."""
    if not standins.vllm_importable():
        pytest.skip("vLLM is not installed", allow_module_level=True)
    try:
        for name in (LRU, ARC):
            importlib.import_module(name)
    except Exception as exc:  # an install without some dependency, a CUDA-only build, ...
        pytest.skip(
            f"vLLM is installed but its policy modules do not import: "
            f"{type(exc).__name__}: {exc}",
            allow_module_level=True,
        )
    vllm = sys.modules["vllm"]
    assert not standins.is_standin(vllm)
    return str(getattr(vllm, "__version__", "unknown"))


VERSION = _vllm_version()


def _shown(report: Report) -> str:
    return "\n".join(
        f"{f.requirement} ({f.level}): {f.message}\n  trace: {f.trace}" for f in report.failures
    )


@pytest.mark.parametrize(
    ("target", "profile", "capacity"),
    [(f"{LRU}:LRUCachePolicy", "lru", 64), (f"{ARC}:ARCCachePolicy", "arc", 8)],
    ids=["lru", "arc"],
)
def test_in_tree_policy_conforms_to_its_profile(target: str, profile: str, capacity: int) -> None:
    # capacity 8 for ARC, as tests/test_arc_corpus.py: ghost hits and a
    # moving target are dense in a small cache.
    report = run_check(load_subject(target), get_profile(profile), budget="quick", seed=SEED,
                       capacity=capacity)
    module = sys.modules[target.partition(":")[0]]
    assert not standins.is_standin(module) and module.__file__, module
    assert OWN_MODULES in report.notes, report.notes
    assert not any("stand-in" in note for note in report.notes), report.notes
    assert not report.errors, f"vLLM {VERSION}: {report.errors}\n{_shown(report)}"
    assert report.verdict == "pass", f"vLLM {VERSION}, API {report.api}:\n{_shown(report)}"
