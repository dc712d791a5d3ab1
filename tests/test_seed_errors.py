"""The optional seed-errors profile: the seed's KeyError on two caller
mistakes, SHOULD level (fails only with strict)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from policyspec.profiles import get_profile
from policyspec.reference import LRUCachePolicy
from policyspec.session import run_check
from policyspec.subject import subject_from_class


def tolerant_policy() -> type:
    path = Path(__file__).parent / "correct" / "tolerant_lru.py"
    spec = importlib.util.spec_from_file_location("tolerant_lru", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    policy: type = module.Policy
    return policy


def test_reference_lru_raises_the_seeds_key_errors() -> None:
    report = run_check(subject_from_class(LRUCachePolicy), get_profile("seed-errors"),
                       engines=["seed-errors"], budget=1.0)
    statuses = {r.id: r.status for r in report.requirements if r.profile == "seed-errors"}
    assert statuses == {"SEED-ERR-MARK-NON-EVICTABLE": "pass", "SEED-ERR-REMOVE-ABSENT": "pass"}


def test_tolerant_policy_is_reported_and_fails_only_with_strict() -> None:
    subject = subject_from_class(tolerant_policy())
    lenient = run_check(subject, get_profile("seed-errors"), engines=["seed-errors"], budget=1.0)
    failed = {f.requirement for f in lenient.failures}
    assert failed & {"SEED-ERR-MARK-NON-EVICTABLE", "SEED-ERR-REMOVE-ABSENT"}
    assert lenient.verdict == "unjudged"  # SHOULDs only; core's MUSTs left to other engines
    strict = run_check(subject, get_profile("seed-errors"), engines=["seed-errors"], budget=1.0,
                       strict=True)
    assert strict.verdict == "fail"
