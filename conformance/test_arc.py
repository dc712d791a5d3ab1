"""Conformance checks for spec/arc.md: one test per requirement defined there.

Runs with ``pytest --policy TARGET --policy-profile arc``.
"""

from policyspec.testing import ConformanceSuite


class TestArc(ConformanceSuite):
    section = "arc"
    # Without --policy, this repository's CI checks its reference ARC here.
    default_target = "policyspec.reference:ARCCachePolicy"
    default_profile = "arc"
