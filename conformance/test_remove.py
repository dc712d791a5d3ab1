"""Conformance checks for spec/remove.md: one test per requirement defined there.

Runs on `pytest --policy TARGET` (default: the reference LRU, profile lru).
"""

from policyspec.testing import ConformanceSuite


class TestRemove(ConformanceSuite):
    section = "remove"
