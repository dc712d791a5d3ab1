"""Conformance checks for spec/get.md: one test per requirement defined there.

Runs on `pytest --policy TARGET` (default: the reference LRU, profile lru).
"""

from policyspec.testing import ConformanceSuite


class TestGet(ConformanceSuite):
    section = "get"
