"""The trace engine (spec/traffic.md, "The trace engine"): a serving trace
through the emulated manager, every call in lockstep with the model. The
references pass on the bundled sample; faulty policies of the corpus are
caught under their headers' ids on windows of at most 30 calls; a user's
file is played whole; windows start from a rebuilt state."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_corpus import HOOKS, read_header

from policyspec.adapters import load_subject, subject_for_class
from policyspec.cli import main
from policyspec.engines import ENGINES
from policyspec.engines.trace import (
    ENGINE,
    REQUESTS_PER_UNIT,
    Windows,
    run_trace,
    setup_actions,
)
from policyspec.model.actions import Action, by_manager
from policyspec.profiles import get_profile
from policyspec.reference import ARCCachePolicy, LRU033CachePolicy, LRUCachePolicy
from policyspec.run.context import EngineContext, EngineOptions
from policyspec.session import CheckOptions, run_check
from policyspec.workload.reader import read_trace
from policyspec.workload.sample import sample_path


@pytest.mark.parametrize(("cls", "profile"), [
    (LRU033CachePolicy, "core"), (LRU033CachePolicy, "lru-0.33"), (ARCCachePolicy, "arc"),
], ids=["lru033-core", "lru033-lru-0.33", "arc-arc"])
def test_references_pass_on_the_sample(cls: type, profile: str) -> None:
    run = run_trace(EngineContext(subject_for_class(cls), get_profile(profile), 1.0, 0, 64,
                                  count=160))
    assert run.error is None and run.findings == []
    assert run.examples == 4  # both timings, the threshold off and on, one observed
    assert run.counts["trace_requests"] == 160
    assert run.counts["trace_blocks_evicted"] > 100 and run.counts["trace_hit_blocks"] > 0
    for rid in ("HOOK-TOTAL", "API-ANY-THREAD", "EVICT-SHAPE", "GET-IDENTITY"):
        assert run.checked[rid] > 0, rid


def test_the_budget_buys_a_count_of_requests() -> None:
    run = run_trace(EngineContext(subject_for_class(LRU033CachePolicy), get_profile("core"), 2.0,
                                  3, 64))
    assert run.counts["trace_requests"] == 2 * REQUESTS_PER_UNIT
    again = run_trace(EngineContext(subject_for_class(LRU033CachePolicy), get_profile("core"), 2.0,
                                    3, 64))
    assert again.calls == run.calls and again.counts == run.counts


def test_a_policy_without_request_hooks_gets_a_note_and_no_call() -> None:
    run = run_trace(EngineContext(subject_for_class(LRUCachePolicy), get_profile("core"), 1.0, 0,
                                  64))
    assert run.calls == 0 and "no request hooks" in run.notes[0]
    assert ENGINES[ENGINE].needs == "hooks"


CAUGHT = ["hook_finish_raises_on_in_flight", "hook_store_miss_makes_room",
          "lru033_commits_head_first", "arc033_promotes_insertion_only"]


@pytest.mark.parametrize("name", CAUGHT)
def test_faulty_policies_are_caught_under_their_ids_on_short_windows(name: str) -> None:
    path = HOOKS / f"{name}.py"
    header = read_header(path)
    report = run_check(load_subject(f"{path}:Policy"), get_profile(header.profile),
                       options=CheckOptions(
                           budget=4.0, engines=(ENGINE,), jobs=1))
    found = {f.requirement: f for f in report.failures}
    assert header.requirement in found, (header.requirement, list(found))
    assert 1 <= len(found[header.requirement].trace) <= 30


def test_setup_actions_rebuild_the_state_of_a_model() -> None:
    model = get_profile("core").model(8)
    actions: list[Action] = [("insert", k, -1) for k in range(6)]
    actions += [("finish_store", k) for k in (3, 0, 5, 1)] + [("start_read", 1)] * 2
    actions += [("finish_store", 4), ("start_read", 4), ("touch", (0,))]
    before = model.after(actions)
    setup = setup_actions(before.state)
    rebuilt = get_profile("core").model(8).after(setup)
    assert rebuilt.state.refs == before.state.refs
    assert rebuilt.state.idle == before.state.idle
    assert by_manager(setup)


class _Harness:
    """What ``Windows`` reads of a ``Lockstep``: its trace and model."""

    def __init__(self) -> None:
        self.trace: list[Action] = []
        self.model: Any = get_profile("core").model(64)

    def apply(self, action: Action) -> None:
        self.trace.append(action)
        self.model = self.model.after([action])


def test_windows_keep_a_few_checkpoints_and_start_each_from_its_state() -> None:
    harness = _Harness()
    windows = Windows(harness, every=10, keep=3)  # type: ignore[arg-type]
    for k in range(60):
        harness.apply(("insert", k, -1))
        harness.apply(("finish_store", k))
        if windows.due():
            windows.checkpoint()
    assert windows.actions == 120 and windows.cut > 0
    assert len(harness.trace) <= 3 * 10 + 10  # the front is cut
    candidates = windows.candidates()
    assert len(candidates) == 3
    assert all(c[-1] == ("finish_store", 59) for c in candidates)
    for window in candidates:
        rebuilt = get_profile("core").model(64).after(window)
        assert rebuilt.state.refs == harness.model.state.refs
    assert [len(c) for c in candidates] == sorted(len(c) for c in candidates)


def test_a_users_trace_is_played_whole_at_the_runs_capacity(tmp_path: Path) -> None:
    trace = tmp_path / "mine.jsonl"
    with open(trace, "w", encoding="utf-8") as out:
        for request in list(read_trace(sample_path()))[:90]:
            out.write(json.dumps({"time_ms": request.arrival_ms, "blocks": list(request.blocks),
                                  "output_tokens": request.output_tokens}) + "\n")
    run = run_trace(EngineContext(subject_for_class(LRU033CachePolicy), get_profile("lru-0.33"),
                                  0.1, 0, 32, capacity_fixed=True,
                                  options=EngineOptions(trace=str(trace))))
    assert run.error is None and run.findings == [] and run.examples == 1
    assert run.counts["trace_requests"] == 90
    assert run.counts["trace_blocks_evicted"] > 0
    assert str(trace) in run.notes[-1]


def test_a_fault_deep_in_a_users_trace_is_shown_on_a_short_window(tmp_path: Path) -> None:
    """The sample played whole at 48 blocks: the trace is cut as it goes
    (the fault shows after hundreds of requests), and the finding is a
    window rebuilt from a checkpoint, shrunk."""
    subject = load_subject(f"{HOOKS / 'hook_finish_raises_on_in_flight.py'}:Policy")
    run = run_trace(EngineContext(subject, get_profile("core"), 10.0, 0, 48, capacity_fixed=True,
                                  options=EngineOptions(trace=str(sample_path()))))
    assert [f.requirement for f in run.findings] == ["HOOK-TOTAL"]
    assert len(run.findings[0].trace) <= 30 and run.findings[0].shrunk
    assert run.steps > 1000  # found deep in the play


def test_check_trace_needs_the_trace_engine(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", "policyspec.reference:LRU033CachePolicy", "--engine", "fast",
                 "--trace", str(sample_path())])
    assert code == 2
    assert "add --engine trace" in capsys.readouterr().err
