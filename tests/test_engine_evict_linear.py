"""The evict-linear engine (ARC-EVICT-LINEAR): it counts what one evict
looks at, on any block type a policy in this process takes, so that its
verdict is the same on every machine; a policy it cannot count is left
not judged, never timed."""

from __future__ import annotations

import ctypes
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from policyspec.adapters import load_subject, subject_for_class
from policyspec.adapters.blocks import block_factory
from policyspec.engines.counting import Counter, counted
from policyspec.engines.evict_linear import STEEPER, run_evict_linear
from policyspec.profiles import get_profile
from policyspec.reference import ARCCachePolicy
from policyspec.reports.markdown import run_markdown
from policyspec.run.context import EngineContext
from policyspec.run.result import EngineRun
from policyspec.session import run_check
from policyspec.subject import Block, Subject
from policyspec.vllm.standins import policies

FAULTY = Path(__file__).parent / "faulty" / "arc_v05_rescans_per_victim.py"
DEDUPS = Path(__file__).parent / "faulty" / "arc_v09_dedups_victims_in_a_list.py"
RID = "ARC-EVICT-LINEAR"


def _faulty(path: Path) -> Subject:
    return load_subject(f"{path}:Policy")


def _run(subject: Subject) -> EngineRun:
    return run_evict_linear(EngineContext(subject, get_profile("arc"), 1.0, 0, 0), requirement=RID)


def _on_chunks(cls: type) -> Subject:
    """``cls`` on the ctypes ``ChunkStatus`` records vLLM 0.33 and 0.34 hand
    a policy (the stand-in; the real one has the same fields)."""
    return replace(subject_for_class(cls), make_block=block_factory(policies.ChunkStatus))


class _DictStatus:
    """A status whose ``ref_cnt`` lives in the instance's ``__dict__``."""

    def __init__(self, ref_cnt: int, block_id: int) -> None:
        self.ref_cnt = ref_cnt
        self.block_id = block_id


class _HiddenStatus:
    """A status whose ``ref_cnt`` no subclass can stand in front of."""

    __slots__ = ("_fields",)

    def __init__(self, ref_cnt: int, block_id: int) -> None:
        object.__setattr__(self, "_fields", {"ref_cnt": ref_cnt, "block_id": block_id})

    def __getattr__(self, name: str) -> Any:
        try:
            return object.__getattribute__(self, "_fields")[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        object.__getattribute__(self, "_fields")[name] = value


@pytest.mark.parametrize("make_block", [Block, block_factory(policies.ChunkStatus),
                                        block_factory(policies.BlockStatus), _DictStatus],
                         ids=["Block", "ChunkStatus", "BlockStatus", "dict"])
def test_a_rescan_per_victim_is_counted_on_every_block_type(make_block: Any) -> None:
    subject = replace(_faulty(FAULTY), make_block=make_block)
    first, second = _run(subject), _run(subject)
    assert [f.requirement for f in first.findings] == [RID]
    message = first.findings[0].message
    assert "looked at its entries" in message and f"growth at most {STEEPER:g}" in message
    # Counted, not timed: a second run says exactly the same.
    assert [f.message for f in second.findings] == [message]


@pytest.mark.parametrize("make_block", [Block, block_factory(policies.ChunkStatus), _DictStatus],
                         ids=["Block", "ChunkStatus", "dict"])
def test_a_linear_arc_passes_every_shape(make_block: Any) -> None:
    run = _run(replace(subject_for_class(ARCCachePolicy), make_block=make_block))
    assert not run.findings and run.checked[RID] == 4, run.notes


def test_a_list_scan_per_victim_is_counted_by_its_key_comparisons() -> None:
    """V9's ``(k, b) not in candidates``: no more hashes or block reads,
    only comparisons of keys grow with the size."""
    run = _run(_faulty(DEDUPS))
    assert [f.requirement for f in run.findings] == [RID]


def test_counting_blocks_stay_of_the_policys_type_and_count_each_read() -> None:
    factories = counted(_on_chunks(ARCCachePolicy))
    assert not isinstance(factories, str)
    make_block, make_key = factories
    block = make_block(-1, 7)
    assert isinstance(block, policies.ChunkStatus) and isinstance(block, ctypes.Structure)
    block.ref_cnt = 2
    counter = Counter()
    assert (block.ref_cnt, block.chunk_id) == (2, 7)
    assert counter.looks == 1
    hash(make_key(3))
    assert counter.looks == 2
    assert make_key(3) in [make_key(2), make_key(3)]  # a list scan: two comparisons
    assert counter.looks == 4


def test_a_policy_in_another_process_is_not_judged() -> None:
    subject = replace(_faulty(FAULTY), argument_report=lambda: None)
    run = _run(subject)
    assert not run.findings and not run.checked[RID]
    assert any(f"{RID} not judged" in note and "another process" in note for note in run.notes)


@pytest.mark.parametrize("change", [{"make_block": _HiddenStatus},
                                    {"make_key": lambda index: index}],
                         ids=["hidden ref_cnt", "own keys"])
def test_looks_it_cannot_count_leave_it_not_judged(change: dict[str, Any]) -> None:
    run = _run(replace(_faulty(FAULTY), **change))
    assert not run.findings and not run.checked[RID]
    assert any(f"{RID} not judged" in note for note in run.notes), run.notes


def test_its_finding_reproduces_as_the_measurement_it_is() -> None:
    """A finding without a trace comes with a snippet that reruns the
    engine (a replay of no calls would pass), and the report says there is
    no trace rather than showing an empty one."""
    report = run_check(_faulty(FAULTY), get_profile("arc"),
                       engines=["evict-linear"])
    (failure,) = report.failures
    assert failure.requirement == RID and not failure.trace
    assert "no trace: a measurement by the evict-linear engine" in report.to_text()
    assert f"{RID}: a measurement: its snippet" in run_markdown(report)
    with pytest.raises(AssertionError, match=RID):
        exec(compile(failure.repro, "repro.py", "exec"), {})
