"""``policyspec drift``: does a vLLM still have the policy interface
policyspec knows? It reads a vLLM with ``ast`` (never importing it), takes
its fingerprint (what the spec depends on: ``fingerprint``), and compares it
with the fingerprints of the releases policyspec knows (``known/``), so a
new vLLM release that changes the interface is noticed the day it ships.

``origins`` finds the files (importable vllm, wheel, source tree);
``compare`` lists differences; ``outcome`` turns them into the verdict.
"""

from __future__ import annotations

from policyspec.vllm.drift.compare import Difference, differences
from policyspec.vllm.drift.fingerprint import Fingerprint, read_fingerprint
from policyspec.vllm.drift.known import KNOWN_DIR, known_fingerprints, record
from policyspec.vllm.drift.origins import UnreadableError, VllmFiles, open_vllm
from policyspec.vllm.drift.outcome import Drift, judge, unreadable_json

__all__ = [
    "KNOWN_DIR",
    "Difference",
    "Drift",
    "Fingerprint",
    "UnreadableError",
    "VllmFiles",
    "differences",
    "drift_of",
    "judge",
    "known_fingerprints",
    "open_vllm",
    "read_fingerprint",
    "record",
    "unreadable_json",
]


def drift_of(where: str | None) -> Drift:
    """The drift of the vLLM at ``where`` (None: the importable one) from the
    revisions policyspec knows; UnreadableError when it cannot be read."""
    from policyspec.protocols import REVISIONS

    files = open_vllm(where)
    return judge(read_fingerprint(files), files.label, known_fingerprints(), REVISIONS)
