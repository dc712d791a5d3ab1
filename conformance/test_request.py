"""Conformance checks for spec/request.md: one test per requirement defined there.

Runs on ``pytest --policy TARGET``; the requirements need the request hooks
of vLLM 0.33 (R8, R9), and are N/A for policies of earlier revisions.
"""

from policyspec.testing import ConformanceSuite


class TestRequest(ConformanceSuite):
    section = "request"
