"""Conformance checks for spec/insert.md: one test per requirement defined there.

Runs on `pytest --policy TARGET` (default: the reference LRU, profile lru).
"""

from policyspec.testing import ConformanceSuite


class TestInsert(ConformanceSuite):
    section = "insert"
