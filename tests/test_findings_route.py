"""The route from a finding to the report, on policies written as a new
author would (tests/newcomers/): the requirement named is the one the spec
says is broken, whichever engine noticed; a requirement a reported witness
breaks is never PASS; a hang is API-RETURNS alone, at a bounded count of
time limits; a witness is as short as the fault allows."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from policyspec.adapters import load_subject, subject_for_class
from policyspec.engines import ENGINES
from policyspec.findings.finish import COSTLY_REPLAYS, _request_level_blame
from policyspec.harness.failures import COSTLY
from policyspec.options import CheckOptions
from policyspec.profiles import get_profile
from policyspec.reference.lru034 import LRU034CachePolicy
from policyspec.reports.build import assemble
from policyspec.reports.report import FAIL, NOT_TESTED, PASS, FailureReport, Report
from policyspec.reports.verdict import exit_code
from policyspec.run.result import EngineRun
from policyspec.session import check_target, run_check

HERE = Path(__file__).parent
NEW = HERE / "newcomers"
FAULTY = HERE / "faulty"


def _check(target: str, profile: str, engine: str, *, budget: float = 1.0,
           seed: int = 0) -> Report:
    subject = load_subject(target)
    return run_check(subject, get_profile(profile), options=CheckOptions(jobs=1),
                     engines=[engine], budget=budget, seed=seed)


def _status(report: Report, rid: str) -> str:
    return next(s.status for s in report.requirements if s.id == rid)


# -- a failed evict that changes later results --------------------------------


@pytest.mark.parametrize("seed", [0, pytest.param(7, marks=pytest.mark.slow)])
@pytest.mark.parametrize("target", [
    # R10, the hand and the second chances move on a refused evict
    f"{NEW / 'clock_failed_evict_moves_hand.py'}:ClockCachePolicy",
    # the seed API: a refused evict refreshes the ages it scanned
    f"{FAULTY / 'clock_failed_evict_restamps.py'}:Policy",
    # the seed API: a refused evict reorders the idle list
    f"{FAULTY / 'failed_evict_reorders.py'}:Policy",
])
def test_a_failed_evict_that_changes_later_results_is_evict_atomic(target: str,
                                                                   seed: int) -> None:
    report = _check(target, "core", "metamorphic", seed=seed)
    assert [f.requirement for f in report.failures] == ["EVICT-ATOMIC"], report.failures
    assert _status(report, "EVICT-ATOMIC") == FAIL
    # never blamed on threads: none of these policies has one, and the
    # trace of the witness passes from one thread and from two
    assert _status(report, "API-ANY-THREAD") != FAIL
    message = report.failures[0].message
    assert message.endswith(")") or message.endswith("."), message  # not cut off


def test_no_mark_is_blamed_on_a_policy_without_marks() -> None:
    # vLLM 0.34's manager makes no mark call: a completed store only writes
    # ref_cnt, so an order fault after it is the order's, not a mark's
    report = _check(f"{NEW / 'fifo_evicts_only_read_chunks.py'}:FIFOCachePolicy", "fifo",
                    "fast")
    assert [f.requirement for f in report.failures] == ["FIFO-LIVENESS"]
    assert _status(report, "MARK-EVICTABLE-ELIGIBLE") != FAIL


@pytest.mark.parametrize("engine", ["fast", "stateful"])
def test_a_call_that_shows_its_own_fault_is_blamed_not_the_hook_before_it(engine: str) -> None:
    # the hook put the chunk where remove forgets to look: remove's fault
    report = _check(f"{NEW / 'remove_misses_hot_keys.py'}:TwoListLRU", "core", engine)
    assert [f.requirement for f in report.failures] == ["REMOVE-DROPS"]
    assert _status(report, "HOOK-KEEPS-MEMBERSHIP") != FAIL


@pytest.mark.parametrize("engine", ["fast", "stateful"])
@pytest.mark.parametrize("newcomer", ["clock_one_pass_evict", "clock_sweep_stops_at_referenced"])
def test_a_clock_that_takes_a_referenced_chunk_on_no_lap_is_evict_s_fault(engine: str,
                                                                          newcomer: str) -> None:
    # on_request_access only set a reference bit, as CLOCK's hooks do; evict
    # never looks a second time (or stops at the bit), so it refuses an
    # eligible chunk
    report = _check(f"{NEW / (newcomer + '.py')}:ClockCachePolicy", "core", engine)
    assert [f.requirement for f in report.failures] == ["EVICT-LIVENESS"], report.failures
    assert _status(report, "HOOK-KEEPS-MEMBERSHIP") == PASS


@pytest.mark.parametrize("target", [
    f"{FAULTY / 'hooks' / 'hook_access_pins_keys.py'}:Policy",
    f"{FAULTY / 'hooks' / 'hook034_access_frees_in_flight.py'}:Policy",
])
def test_a_hook_that_changes_eligibility_itself_is_blamed(target: str) -> None:
    # the same observation as the CLOCK's above (evict will not take a key
    # after a hook), but no run of evicts beside a fresh key ever reaches it
    report = _check(target, "core", "stateful")
    assert "HOOK-KEEPS-MEMBERSHIP" in [f.requirement for f in report.failures], report.failures


def test_a_finding_that_does_not_come_back_on_replay_is_error_with_both_runs() -> None:
    report = _check(f"{NEW / 'one_shot_get_fault.py'}:OneShotLRU", "core", "fast")
    assert report.verdict == "error", report.verdict
    [failure] = report.failures
    assert not failure.reproduced and failure.trace
    assert "seen by the fast engine" in failure.message
    assert "replayed on a fresh policy, the same" in failure.message
    # the run's error points at it; the requirement is neither FAIL nor PASS
    assert any("does not reproduce" in e for e in report.errors), report.errors
    assert _status(report, failure.requirement) == NOT_TESTED
    assert exit_code(report.verdict, any(f.reproduced for f in report.failures)) == 2


def test_threads_are_blamed_only_where_the_trace_fails_with_them() -> None:
    # A witness whose trace passes on its own replay (a relation's, the
    # manager's bookkeeping, a measurement) keeps the id its engine gave it.
    subject = load_subject("policyspec.reference:LRU034CachePolicy")
    profile = get_profile("core")
    trace = (("insert", 0, -1), ("finish_store", 0), ("evict", 1, frozenset()))
    for rid in ("EVICT-ATOMIC", "MANAGER-IDLE-COUNT", "GET-PURE"):
        assert _request_level_blame(subject, profile, 8, trace, rid, "m") == (rid, "m")


class RaisesOnASecondThread(LRU034CachePolicy[Any, Any]):
    """Breaks only when a call comes from another thread than its insert's."""

    def insert(self, key: Any, chunk: Any, req_context: Any) -> None:
        self.thread = threading.get_ident()
        super().insert(key, chunk, req_context)

    def mark_evictable(self, key: Any) -> None:
        if threading.get_ident() != self.thread:
            raise RuntimeError("called from a second thread")
        super().mark_evictable(key)


def test_a_hang_or_a_crash_is_never_blamed_on_threads() -> None:
    # Whether a call hangs past the time limit, or ends the process, is not
    # read off one pass of the same calls from one thread: a call that takes
    # about the limit passes once and fails once (a CLOCK whose hand grows
    # as a power took that long and was named API-ANY-THREAD).
    subject = subject_for_class(RaisesOnASecondThread)
    profile = get_profile("core")
    # (the harness makes every eighth action from its second thread)
    trace = (*(("insert", k, -1) for k in range(7)), ("finish_store", 0),
             ("evict", 1, frozenset()))
    assert _request_level_blame(subject, profile, 8, trace, "API-NO-RAISE", "m")[0] == (
        "API-ANY-THREAD")  # the control: a raise from the second thread only
    for rid in sorted(COSTLY):
        assert _request_level_blame(subject, profile, 8, trace, rid, "m") == (rid, "m")


def test_a_requirement_an_engine_saw_broken_is_never_pass() -> None:
    subject = load_subject("policyspec.reference:LRUCachePolicy")
    profile = get_profile("lru")
    run = EngineRun(engine="fast")
    run.checked.update({"LRU-ORDER-KEPT": 5, "LRU-MARK-RECENCY": 5})
    failure = FailureReport("LRU-MARK-RECENCY", "MUST", "t", "m", ["step"], "", "fast",
                            also_breaks=["LRU-ORDER-KEPT"])
    report = assemble(subject, profile, [run], [failure], seed=0, strict=False, capacity=8,
                      seconds=0.0)
    assert _status(report, "LRU-MARK-RECENCY") == FAIL
    assert _status(report, "LRU-ORDER-KEPT") == FAIL
    kept = next(s for s in report.requirements if s.id == "LRU-ORDER-KEPT")
    assert "LRU-MARK-RECENCY" in kept.reason
    without = assemble(subject, profile, [run], [FailureReport(
        "LRU-MARK-RECENCY", "MUST", "t", "m", ["step"], "", "fast")], seed=0, strict=False,
        capacity=8, seconds=0.0)
    assert _status(without, "LRU-ORDER-KEPT") == PASS


# -- a witness as short as the fault --------------------------------------------


@pytest.mark.parametrize(("engine", "seed"), [
    ("fast", 7), ("exhaustive", 0),
    *(pytest.param(e, s, marks=pytest.mark.slow)
      for e, s in (("fast", 0), ("stateful", 7), ("metamorphic", 0))),
])
def test_a_remove_that_leaves_its_key_idle_shows_in_a_few_steps(engine: str, seed: int) -> None:
    report = _check(f"{NEW / 'remove_leaves_key_idle.py'}:LeakyLRU", "core", engine,
                    seed=seed)
    assert [f.requirement for f in report.failures] == ["EVICT-IDLE-ONLY"]
    trace = report.failures[0].trace
    # insert (idle, or in flight and completed), remove, evict: nothing else
    assert len(trace) <= 4, trace
    assert trace[-2] == "remove key 0"
    assert "protected=[]" in trace[-1]


# -- a fault past a size: FAIL, never ERROR --------------------------------------


@pytest.mark.slow
def test_an_idle_list_that_drops_its_oldest_key_at_1024_fails() -> None:
    # the seed API under the exact lru profile: the lost key is a needless
    # refusal of evict (LRU-LIVENESS), seen only past 1,024 idle keys
    report = _check(f"{NEW / 'ring_lru_recycles_at_1024_idle.py'}:RingLRU", "lru", "size",
                    budget=2.0)
    assert report.verdict == FAIL and not report.errors
    assert [f.requirement for f in report.failures] == ["LRU-LIVENESS"]
    # R10 under core: the same loss is a SHOULD (EVICT-LIVENESS) that only
    # the size engine can see: reported, not only counted
    report = _check(f"{NEW / 'ring_recycles_at_1024_idle.py'}:RingCachePolicy", "core",
                    "size", budget=2.0)
    assert not report.errors
    assert [f.requirement for f in report.failures] == ["EVICT-LIVENESS"]
    assert "fill 10" in report.failures[0].message  # at fill 1,025 or so


# -- a hang --------------------------------------------------------------------------


def _time_limit_bound(profile: str) -> int:
    """What hangs may cost a run: each engine part stops at its first hang
    (a second for a part that judges what it drew), and the route spends at
    most COSTLY_REPLAYS shrinking, one confirming the result at the run's own
    limit and one wording its message."""
    chosen = get_profile(profile)
    parts = sum(e.parts for e in ENGINES.values() if e.default and e.applies(chosen))
    return 2 * parts + COSTLY_REPLAYS + 2


@pytest.mark.slow
@pytest.mark.parametrize(("target", "isolate"), [
    (f"{NEW / 'hang_in_evict_at_four.py'}:HangingLRU", True),  # R10, in a child process
    (f"{HERE / 'hostile' / 'hang_in_evict.py'}:Policy", False),  # seed API, in process
])
def test_a_hang_in_evict_is_api_returns_alone(target: str, isolate: bool) -> None:
    report = check_target(target, "core", CheckOptions(
        isolate=isolate, call_timeout=1.0 if isolate else 0.5, budget=1.0, jobs=2))
    assert [f.requirement for f in report.failures] == ["API-RETURNS"]
    for consequence in ("API-NO-RAISE", "API-PROCESS-ALIVE"):
        assert _status(report, consequence) != FAIL
    spent = report.stats["time_limits"]
    assert 1 <= spent <= _time_limit_bound("core"), spent
    trace = report.failures[0].trace
    # shrunk within that count: the call that hangs last, asking for one key
    # and protecting none, after a handful of stores (four, or three idle)
    assert trace[-1].startswith("evict(1, protected=[]"), trace
    assert len(trace) <= 16, trace
