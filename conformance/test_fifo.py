"""Conformance checks for spec/fifo.md: one test per requirement defined there.

Runs with ``pytest --policy TARGET --policy-profile fifo``; without
``--policy`` (this repository's CI) nothing here applies: the references
are no FIFO, and tests/test_extending.py checks the profile itself.
"""

from policyspec.testing import ConformanceSuite


class TestFifo(ConformanceSuite):
    section = "fifo"
