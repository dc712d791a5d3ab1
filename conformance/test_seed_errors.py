"""Conformance checks for spec/seed-errors.md: one test per requirement defined there.

Runs with ``pytest --policy TARGET --policy-profile seed-errors``.
"""

from policyspec.testing import ConformanceSuite


class TestSeedErrors(ConformanceSuite):
    section = "seed-errors"
    # Without --policy, the reference LRU is held to the seed's errors here.
    default_profile = "seed-errors"
