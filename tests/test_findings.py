"""Findings an author believes, over the engines: every
failure's message names only keys its own trace holds (a size finding's
message once named keys of the larger trace it was shrunk from), no trace
prints more than ``MOST_PRINTED`` steps (long setups print as one step,
witness.steps), and a witness vLLM's manager can make is preferred when an
engine found one; the touch that walks forward is blamed on the touch's
requirement, not on the order it later shows in."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from policyspec.adapters import load_subject
from policyspec.options import CheckOptions
from policyspec.profiles import get_profile
from policyspec.reports.report import FAIL, PASS, FailureReport, Report
from policyspec.session import run_check
from policyspec.witness.steps import numbered

HERE = Path(__file__).parent
FAULTY = HERE / "faulty"
MOST_PRINTED = 30

CASES = [
    # (file under tests/faulty, profile, engine): one or more per engine.
    ("v01_ignores_protected.py", "core", "stateful"),
    ("g12_revives_old_block.py", "core", "manager"),
    ("failed_evict_reorders.py", "core", "metamorphic"),
    ("v09_evicts_in_flight_first.py", "core", "fast"),
    ("size_protected_cut_at_1000.py", "core", "size"),
    ("size_touch_bulk_makes_busy_idle.py", "core", "size"),
    ("size_heap_rebuild_drops_unchanged.py", "lru", "size"),
    ("size_evict_count_compared_with_is.py", "core", "size"),
    ("arc_v06_ghosts_bounded_by_constant.py", "arc", "arc-memory"),
    ("hooks/lru033_refinishes_earlier_requests.py", "lru-0.33", "request-memory"),
    ("hooks/hook_store_miss_makes_room.py", "core", "vllm-manager"),
    ("hooks/hook_finish_raises_on_in_flight.py", "core", "trace"),
    ("exhaustive_third_key_touched_twice.py", "core", "exhaustive"),
]

_NUMBER = re.compile(r"-?\d+")
_RANGE = re.compile(r"(\d+)\.\.(\d+)")
_NAMED = re.compile(r"\bkeys? (\d+)\b|\bget\((\d+)\)|[\[{]([\d., ]*)[\]}]")


def _numbers(text: str) -> set[int]:
    """Every whole number in ``text``, ranges ``a..b`` expanded."""
    found = {int(n) for n in _NUMBER.findall(_RANGE.sub("", text))}
    for low, high in _RANGE.findall(text):
        found.update(range(int(low), int(high) + 1))
    return found


def named_keys(message: str) -> set[int]:
    """The keys a message names: ``key 3``, ``get(3)``, and the members of
    set and list displays (``{6, 7}``, ``[0..9]``)."""
    keys: set[int] = set()
    for key, got, members in _NAMED.findall(message):
        keys |= _numbers(key or got or members)
    return keys


def _check(path: str, profile: str, engine: str) -> Report:
    bounds = {"depth": 5, "keys": 3} if engine == "exhaustive" else {}
    return run_check(load_subject(f"{FAULTY / path}:Policy"), get_profile(profile),
                     options=CheckOptions(budget=2.0, engines=(engine,), jobs=1, seed=7,
                                          **bounds))


def _printed(failure: FailureReport) -> int:
    return len(numbered(failure.trace))


@pytest.mark.parametrize(("path", "profile", "engine"), CASES,
                         ids=[f"{engine}:{Path(path).stem}" for path, _, engine in CASES])
def test_a_message_names_only_keys_its_trace_holds(path: str, profile: str,
                                                    engine: str) -> None:
    report = _check(path, profile, engine)
    assert report.failures, f"{path}: {engine} found nothing ({report.verdict})"
    assert not report.errors, report.errors
    for failure in report.failures:
        held = _numbers(" ".join(failure.trace))
        stray = named_keys(failure.message) - held
        assert not stray, (f"{failure.requirement}: the message names {sorted(stray)}, which "
                           f"its trace does not hold:\n{failure.message}\n{failure.trace}")
        assert _printed(failure) <= MOST_PRINTED, numbered(failure.trace)


def test_the_key_reader_sees_keys_that_are_not_in_a_trace() -> None:
    """The test above can fail: the message of the issue's report."""
    message = "evict(1, {6, 7}) returned [6], which names a protected key"
    assert named_keys(message) - _numbers("insert key 0 (idle, ref_cnt 0); evict(1, []))") \
        == {6, 7}
    assert named_keys("touch [0..3] (4 keys) and get(9)") == {0, 1, 2, 3, 9}


def test_a_forward_touch_is_blamed_on_the_touch_order_with_a_managers_witness() -> None:
    """The size engine shows the fault in 4 steps no manager makes (an idle
    insert), the manager engine on traffic: the report blames the touch
    (LRU-TOUCH-ORDER FAIL, LRU-MARK-RECENCY PASS) on the manager's witness."""
    report = run_check(load_subject(f"{FAULTY / 'touch_walks_forward.py'}:Policy"),
                       get_profile("lru"),
                       options=CheckOptions(budget=2.0, engines=("size", "manager"), jobs=1,
                                            seed=7))
    assert [f.requirement for f in report.failures] == ["LRU-TOUCH-ORDER"]
    failure = report.failures[0]
    assert failure.by_manager, failure.trace
    statuses = {r.id: r.status for r in report.requirements}
    assert statuses["LRU-TOUCH-ORDER"] == FAIL
    assert statuses["LRU-MARK-RECENCY"] == PASS
