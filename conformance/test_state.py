"""Conformance checks for spec/state.md: one test per requirement defined there.

Runs on `pytest --policy TARGET` (default: the reference LRU, profile lru).
"""

from policyspec.testing import ConformanceSuite


class TestState(ConformanceSuite):
    section = "state"
