"""Conformance checks for spec/lru033.md: one test per requirement defined there.

Runs with ``pytest --policy TARGET --policy-profile lru-0.33``.
"""

from policyspec.testing import ConformanceSuite


class TestLru033(ConformanceSuite):
    section = "lru033"
    # Without --policy, this repository's CI checks its reference here.
    default_target = "policyspec.reference:LRU033CachePolicy"
    default_profile = "lru-0.33"
