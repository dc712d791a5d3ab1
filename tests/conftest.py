"""Hypothesis settings for this repository's own tests.

No per-example deadline: the machine is shared and CPU-bound test runs can
be slowed many times over, which says nothing about correctness (speed is
measured by benchmarks/, never by tests). Under CI=true Hypothesis's own
``ci`` profile applies (derandomized, no database, no deadline).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

from policyspec.assertions import release_stand_ins

settings.register_profile("policyspec-dev", deadline=None)
if not os.environ.get("CI"):
    settings.load_profile("policyspec-dev")


@pytest.fixture(autouse=True)
def _no_stand_ins_left_by_snippets() -> Iterator[None]:
    """A test that runs a failure's snippet in this process leaves the vLLM
    stand-ins installed (the snippet keeps them for the policy's lazy
    imports); the next test starts without them."""
    yield
    release_stand_ins()
