"""Hypothesis settings for this repository's own tests.

No per-example deadline: the machine is shared and CPU-bound test runs can
be slowed many times over, which says nothing about correctness (speed is
measured by benchmarks/, never by tests). Under CI=true Hypothesis's own
``ci`` profile applies (derandomized, no database, no deadline).
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("policyspec-dev", deadline=None)
if not os.environ.get("CI"):
    settings.load_profile("policyspec-dev")
