"""What a failure says is worded for the policy at hand:
no ``mark_evictable`` in the trace or the snippet of a policy whose revision
has no such method, and an identity failure names block ids and the step
that inserted the real block instead of printing object addresses."""

from __future__ import annotations

from pathlib import Path

import pytest

from policyspec.adapters import load_subject
from policyspec.profiles import get_profile
from policyspec.session import run_check

_R1_POLICY = '''
import copy


class Policy:
    """Six methods only (R1): the faults are in evict."""

    def __init__(self, cache_capacity):
        self.blocks = {}

    def get(self, key):
        return self.blocks.get(key)

    def insert(self, key, block):
        self.blocks[key] = block

    def remove(self, key):
        del self.blocks[key]

    def touch(self, keys):
        pass

    def evict(self, n, protected):
        chosen = [k for k, b in self.blocks.items() if ELIGIBLE and k not in protected][:n]
        if len(chosen) < n:
            return None
        return [(k, HANDED) for k in chosen]
'''


def _policy(eligible: str, handed: str) -> str:
    """The R1 policy above with its evict's eligibility test and what it
    hands back for each victim filled in."""
    return _R1_POLICY.replace("ELIGIBLE", eligible).replace("HANDED", handed)


R1_EVICTS_IN_FLIGHT = _policy("True", "self.blocks.pop(k)")
"""Evicts the oldest blocks whatever their ref_cnt (EVICT-IDLE-ONLY)."""
COPIES = _policy("b.ref_cnt == 0", "copy.copy(self.blocks.pop(k))")
"""Hands back copies of the victims' blocks (EVICT-IDENTITY)."""


def _report(tmp_path: Path, source: str) -> tuple[str, object]:
    path = tmp_path / "policy.py"
    path.write_text(source, encoding="utf-8")
    subject = load_subject(f"{path}:Policy")
    report = run_check(subject, get_profile("core"), budget=3.0, engines=("fast",))
    return subject.api, report


def test_a_policy_without_marks_reads_no_mark_calls(tmp_path: Path) -> None:
    api, report = _report(tmp_path, R1_EVICTS_IN_FLIGHT)
    assert api == "R1"
    failure = next(f for f in report.failures if f.requirement == "EVICT-IDLE-ONLY")
    assert any("completes" in step for step in failure.trace), failure.trace
    assert not any("mark_evictable" in step for step in failure.trace), failure.trace
    assert "mark_evictable" not in failure.repro and "mark_non_evictable" not in failure.repro
    # it runs on the R1 policy as written, to the assertion of its requirement
    with pytest.raises(AssertionError, match=r"^EVICT-IDLE-ONLY: "):
        exec(compile(failure.repro, "repro", "exec"), {})


def test_an_identity_failure_names_block_ids_and_the_inserting_step(tmp_path: Path) -> None:
    _, report = _report(tmp_path, COPIES)
    failure = next(f for f in report.failures if f.requirement == "EVICT-IDENTITY")
    assert " at 0x" not in failure.message, failure.message
    assert "block id" in failure.message and "(a copy)" in failure.message
    step = int(failure.message.split("inserted at step ")[1].split()[0])
    assert failure.trace[step - 1].startswith("insert key"), (failure.message, failure.trace)


def test_an_exception_that_spells_a_key_shows_the_traces_key_number() -> None:
    # v10's remove calls list.remove on its order list, whose ValueError
    # spells the real key (bytes): the message names "key 1" instead.
    from policyspec.model.state import IN_FLIGHT
    from policyspec.witness.reproduce import failure_of

    subject = load_subject(str(Path(__file__).parent / "faulty" / "v10_remove_drops_neighbour.py")
                           + ":Policy")
    trace = [("insert", 0, IN_FLIGHT), ("insert", 1, IN_FLIGHT), ("remove", 0), ("remove", 1)]
    failure = failure_of(subject, get_profile("core"), 64, trace, observe=False)
    assert failure is not None and failure.requirement == "API-NO-RAISE"
    assert "raised ValueError: key 1 is not in list" in failure.message, failure.message
    assert "\\x" not in failure.message
