"""The installed vLLM's own in-tree LRU and ARC, checked with policyspec
with the quick budget and a fixed seed, against vLLM's own modules (not
policyspec's stand-ins): the LRU passes its release's exact profile
(lru-0.33, lru-0.34), whose run judges every core requirement too (it
includes core: a core run of its own would repeat the same engines'
work), and lru up to vLLM 0.30 (from 0.31 it fails exactly
LRU-MARK-RECENCY, by design: HEAP_LRU; 0.34's has no touch, so lru's touch
clause does not apply); the ARC passes core and its release's exact
profile (arc, arc-0.34).

Runs only where vLLM's policy modules import: .ci/vllm.sh installs vLLM
0.33.0 and 0.34.0 on the CPU and runs it in each (README, "Checking against
an installed vLLM"); skipped everywhere else.
"""

from __future__ import annotations

import sys

import pytest
from vllm_env import installed_release, require_vllm

from policyspec.adapters import load_subject
from policyspec.profiles import get_profile
from policyspec.registry import requirements_for
from policyspec.reports.report import Report
from policyspec.session import run_check
from policyspec.vllm import standins

LRU = "vllm.v1.kv_offload.cpu.policies.lru"
ARC = "vllm.v1.kv_offload.cpu.policies.arc"
OWN_MODULES = "vLLM is installed: the policy ran against its own modules"
SEED = 0


def _vllm_version() -> str:
    """The installed vLLM's version; skips the module when its policies do
    not import (an error under POLICYSPEC_REQUIRE_VLLM, tests/vllm_env.py)."""
    vllm = require_vllm(LRU, ARC)
    return str(getattr(vllm, "__version__", "unknown"))


VERSION = _vllm_version()
RELEASE = installed_release(sys.modules["vllm"])
EXACT = {"0.33": ("lru-0.33", "arc"), "0.34": ("lru-0.34", "arc-0.34")}[RELEASE]
"""The installed release's exact LRU and ARC profiles."""


def _shown(report: Report) -> str:
    return "\n".join(
        f"{f.requirement} ({f.level}): {f.message}\n  trace: {f.trace}" for f in report.failures
    )


HEAP_LRU = (0, 31)
"""From vLLM 0.31 the in-tree LRU is a heap that keeps the order the request
assigned when a key becomes evictable (its docstring: recency independent of
transfer pinning), a deliberate departure from the seed LRU that the lru
profile specifies: mark_evictable no longer makes a key the most recent."""


NO_TOUCH = (0, 34)
"""From vLLM 0.34 policies have no touch (API revision R10)."""


def _release(version: str) -> tuple[int, ...]:
    parts = []
    for part in version.split(".")[:2]:
        digits = "".join(ch for ch in part if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def _check(target: str, profile: str, capacity: int) -> Report:
    chosen = get_profile(profile)
    report = run_check(load_subject(target, prefer=chosen.api), chosen, budget="quick",
                       seed=SEED, capacity=capacity)
    module = sys.modules[target.partition(":")[0]]
    assert not standins.is_standin(module) and module.__file__, module
    assert OWN_MODULES in report.notes, report.notes
    assert not any("stand-in" in note for note in report.notes), report.notes
    assert not report.errors, f"vLLM {VERSION}: {report.errors}\n{_shown(report)}"
    return report


@pytest.mark.parametrize(
    ("target", "profile", "capacity"),
    [
        (f"{LRU}:LRUCachePolicy", EXACT[0], 64),
        (f"{ARC}:ARCCachePolicy", "core", 64),
        (f"{ARC}:ARCCachePolicy", EXACT[1], 8),
    ],
    ids=["lru-exact", "arc-core", "arc-exact"],
)
def test_in_tree_policy_conforms_to_its_profile(target: str, profile: str, capacity: int) -> None:
    # capacity 8 for ARC, as tests/test_arc_corpus.py: ghost hits and a
    # moving target are dense in a small cache.
    report = _check(target, profile, capacity)
    assert report.verdict == "pass", f"vLLM {VERSION}, API {report.api}:\n{_shown(report)}"
    judged = {s.id for s in report.requirements}
    assert {r.id for r in requirements_for(("core",))} <= judged, profile


def test_in_tree_lru_against_the_seed_order() -> None:
    """Up to 0.30 the in-tree LRU is the seed's: it passes lru. From 0.31 it
    differs in exactly one requirement, LRU-MARK-RECENCY (HEAP_LRU). From
    0.34 (no touch) its recency comes only from a request's finish, which
    the seed's order does not know: it differs in LRU-ORDER-KEPT as well,
    whichever of the two an engine meets first."""
    report = _check(f"{LRU}:LRUCachePolicy", "lru", 64)
    failed = {f.requirement for f in report.failures}
    if _release(VERSION) < HEAP_LRU:
        assert report.verdict == "pass", f"vLLM {VERSION}, API {report.api}:\n{_shown(report)}"
    elif _release(VERSION) < NO_TOUCH:
        assert failed == {"LRU-MARK-RECENCY"}, f"vLLM {VERSION}:\n{_shown(report)}"
    else:
        assert failed and failed <= {"LRU-MARK-RECENCY", "LRU-ORDER-KEPT"}, (
            f"vLLM {VERSION}:\n{_shown(report)}")
