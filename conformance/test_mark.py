"""Conformance checks for spec/mark.md: one test per requirement defined there.

Runs on `pytest --policy TARGET` (default: the reference LRU, profile lru).
"""

from policyspec.testing import ConformanceSuite


class TestMark(ConformanceSuite):
    section = "mark"
