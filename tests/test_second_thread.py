"""The manager's second thread (harness/second_thread.py): one thread
serves every harness and engine of a process in turn, jobs stay serialized,
their exceptions reach the waiting thread, and a run of many examples
leaves no idle threads behind (each harness used to start its own)."""

from __future__ import annotations

import threading

import pytest

from policyspec.adapters import subject_for_class
from policyspec.engines.fast import run_fast
from policyspec.harness import Lockstep
from policyspec.harness.lockstep import THREAD_EVERY
from policyspec.harness.second_thread import on_second_thread
from policyspec.profiles import get_profile
from policyspec.reference import LRU033CachePolicy
from policyspec.run.context import EngineContext

LRU_033 = subject_for_class(LRU033CachePolicy).fitted("R9")  # 0.33: with touch
CORE = get_profile("core")


def test_jobs_run_on_another_thread_and_hand_back_results_and_errors() -> None:
    here = threading.get_ident()
    assert on_second_thread(threading.get_ident) != here
    assert on_second_thread(threading.get_ident) == on_second_thread(threading.get_ident)

    def fails() -> None:
        raise KeyError("from the second thread")

    with pytest.raises(KeyError, match="from the second thread"):
        on_second_thread(fails)
    assert on_second_thread(lambda: 7) == 7  # the thread survived the error


def test_many_harnesses_with_threads_leave_no_threads_behind() -> None:
    before = threading.active_count()
    for _ in range(200):
        harness = Lockstep(LRU_033, CORE, THREAD_EVERY)
        assert harness.threads
        harness.run([("insert", k, 0) for k in range(THREAD_EVERY)] + [("touch", (0, 1))])
        assert harness.checked["API-ANY-THREAD"] >= 1
    assert threading.active_count() <= before + 1


def test_the_fast_engine_shares_the_second_thread() -> None:
    run_fast(EngineContext(LRU_033, CORE, 0.3, 5, 64))
    before = threading.active_count()
    run = run_fast(EngineContext(LRU_033, CORE, 0.3, 6, 64))
    assert run.checked["API-ANY-THREAD"] > 0
    assert threading.active_count() <= before
