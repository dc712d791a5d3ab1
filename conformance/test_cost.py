"""Conformance checks for spec/cost.md: one test per requirement defined there.

Runs with ``pytest --policy TARGET --policy-profile cost``.
"""

from policyspec.testing import ConformanceSuite


class TestCost(ConformanceSuite):
    section = "cost"
    # Without --policy, the reference LRU is held to the cost requirements here.
    default_profile = "cost"
