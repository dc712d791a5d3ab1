"""The guard's judge in a second process (``POLICYSPEC_GUARD_JUDGE=process``):
the same violations as the inline judge, every call judged, and a judge
that fails or dies stops the judging, never the policy or the recording."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from policyspec.commands.record import record
from policyspec.guard import GuardPolicy
from policyspec.reference.lru import LRUCachePolicy
from policyspec.subject import Block

FAULTY = Path(__file__).parent / "faulty"
REFERENCE = "policyspec.reference.lru:LRUCachePolicy"


def _violations(guard: Any) -> list[tuple[int, str, str]]:
    return [(v.call, v.requirement, v.message) for v in guard.violations]


@pytest.mark.parametrize("stem", ["v01_ignores_protected", "v09_evicts_in_flight_first",
                                  "evict_returns_copies"])
def test_the_judge_process_reports_what_the_inline_judge_reports(
        stem: str, tmp_path: Path) -> None:
    target = f"{FAULTY / stem}.py:Policy"
    runs = {judge: record(target, str(tmp_path / f"{judge}.jsonl"), calls=20_000, seed=1,
                          capacity=16, mode="check", judge=judge)[0]
            for judge in ("inline", "process")}
    inline, process = _violations(runs["inline"]), _violations(runs["process"])
    assert inline, f"{stem}: the inline judge found nothing to compare"
    assert process == inline
    assert runs["process"].calls == runs["inline"].calls


def test_a_conforming_run_is_judged_to_its_last_call(tmp_path: Path) -> None:
    guard, stopped = record(REFERENCE, str(tmp_path / "h.jsonl"), calls=30_000, seed=3,
                            mode="check", judge="process")
    assert stopped is None and not guard.violations
    assert guard._judge_process.judged == guard.calls >= 30_000


def _calls(guard: GuardPolicy, start: int, count: int) -> None:
    for i in range(start, start + count):
        block = Block(-1, i)
        guard.insert(i, block)
        block.ref_cnt = 0
        guard.mark_evictable(i)
        guard.get(i)
        guard.remove(i)


def test_a_judge_process_that_dies_stops_the_judging_not_the_recording(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "h.jsonl"
    guard = GuardPolicy(8, target=LRUCachePolicy, mode="check", judge="process", history=path)
    _calls(guard, 0, 100)
    guard.flush()
    judge = guard._judge_process
    assert judge is not None and judge.child is not None
    judge.child.kill()
    judge.child.wait()
    with caplog.at_level(logging.ERROR, logger="policyspec.guard"):
        _calls(guard, 100, 5_000)  # flushes into the dead child's pipe
        guard.close()
    assert judge.child is None and judge.judged is None
    assert any("the judge process failed" in r.getMessage() for r in caplog.records)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    inserts = [r for r in records if isinstance(r, list) and r[0] == 1]
    assert len(inserts) == 5_100  # every call after the judge died is recorded too


@pytest.mark.parametrize(("mode", "on_violation"), [("check", "raise"), ("record", "log")])
def test_the_judge_process_only_logs_what_check_mode_finds(
        mode: str, on_violation: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="judge process"):
        GuardPolicy(8, target=LRUCachePolicy, mode=mode, on_violation=on_violation,
                    judge="process", history=tmp_path / "h.jsonl")


def test_an_unknown_judge_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="judge must be inline or process"):
        GuardPolicy(8, target=LRUCachePolicy, mode="check", judge="thread",
                    history=tmp_path / "h.jsonl")


def test_a_judge_process_that_does_not_start_leaves_the_guard_recording(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", "/bin/false")  # ends at once, never ready
    path = tmp_path / "h.jsonl"
    with caplog.at_level(logging.ERROR, logger="policyspec.guard"):
        guard = GuardPolicy(8, target=LRUCachePolicy, mode="check", judge="process",
                            history=path)
        _calls(guard, 0, 50)
        guard.close()
    assert guard._judge_process is not None and guard._judge_process.child is None
    assert any("did not start" in r.getMessage() for r in caplog.records)
    assert guard.calls == 200 and not guard.violations


def test_a_ctrl_c_to_the_process_group_does_not_cut_the_judging(tmp_path: Path) -> None:
    guard = GuardPolicy(8, target=LRUCachePolicy, mode="check", judge="process",
                        history=tmp_path / "h.jsonl")
    _calls(guard, 0, 100)
    judge = guard._judge_process
    assert judge is not None and judge.child is not None
    os.kill(judge.child.pid, signal.SIGINT)
    _calls(guard, 100, 100)
    guard.close()
    assert judge.judged == guard.calls == 800
