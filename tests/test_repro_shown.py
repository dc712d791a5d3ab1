"""Every failure's snippet is a program that was run: it calls the policy in
its own API revision as vLLM's manager would (R9 and R10 with
``req_context``), asserts the requirement with its id and message, and the
report says whether a fresh process showed it failing.

For faulty policies of several kinds (seed API, vLLM 0.33 and 0.34, a
request hook, a measurement, a metamorphic comparison, a call that raises)
the snippet, saved in a fresh file beside a copy of the faulty policy, fails
naming the requirement; with a correct policy put in its place it passes.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Collection
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from policyspec.adapters import subject_for_class
from policyspec.options import CheckOptions
from policyspec.profiles import get_profile
from policyspec.reference import LRUCachePolicy
from policyspec.reports.html import render_run_page
from policyspec.reports.markdown import run_markdown
from policyspec.reports.report import (
    FailureReport,
    Report,
    RequirementStatus,
    dumps,
    load_report,
)
from policyspec.session import check_target, run_check
from policyspec.witness.shown import show, snippet_target

ROOT = Path(__file__).resolve().parent.parent
FAULTY = ROOT / "tests" / "faulty"
HOOKS = FAULTY / "hooks"
FIXTURES = ROOT / "tests" / "repro_fixtures"
SEED = 20240611
TARGET = re.compile(r"policy_class\('([^']*)'")


def _check(target: str, profile: str, engines: tuple[str, ...], budget: float = 3.0,
           call_timeout: float = 10.0) -> Report:
    return check_target(target, profile, CheckOptions(
        budget=budget, jobs=1, engines=engines, seed=SEED, call_timeout=call_timeout))


def _failure(report: Report, requirement: str) -> FailureReport:
    found = [f for f in report.failures if f.requirement == requirement]
    assert found, report.to_text()
    return found[0]


def _run(snippet: str, directory: Path, target: str) -> tuple[int, str]:
    """Exit code and last stderr line of ``snippet`` saved as a file in
    ``directory`` with its policy class taken from ``target``."""
    assert TARGET.search(snippet), snippet
    text = TARGET.sub(lambda _: f"policy_class({target!r}", snippet)
    path = directory / "test_repro.py"
    path.write_text(text, encoding="utf-8")
    done = subprocess.run([sys.executable, path.name], cwd=directory, capture_output=True,
                          text=True, timeout=300, check=False)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    return done.returncode, lines[-1] if lines else ""


def _fails_then_passes(failure: FailureReport, faulty: Path, cls: str, fixed: str,
                       tmp_path: Path) -> None:
    """The snippet, beside a copy of the faulty file, fails naming the
    requirement; with ``fixed`` (a target) in its place it exits 0."""
    assert failure.repro_shown is True, failure.repro_result
    assert failure.repro_result.startswith("exit "), failure.repro_result
    assert f"AssertionError: {failure.requirement}: " in failure.repro_result
    shutil.copy(faulty, tmp_path / "faulty.py")
    code, last = _run(failure.repro, tmp_path, f"faulty.py:{cls}")
    assert code != 0 and last.startswith(f"AssertionError: {failure.requirement}: "), last
    code, last = _run(failure.repro, tmp_path, fixed)
    assert code == 0, (last, failure.repro)


# -- a FIFO for vLLM 0.34 with an order fault -------------------------------------------


@pytest.fixture(scope="module")
def fifo() -> FailureReport:
    report = _check(f"{FIXTURES / 'fifo034.py'}:MarkMovesKey", "fifo", ("fast", "stateful"))
    assert report.api == "R10"
    return _failure(report, "FIFO-ORDER-KEPT")


def test_the_fifo_snippet_asserts_and_names_only_the_keys_of_its_trace(
        fifo: FailureReport, tmp_path: Path) -> None:
    assert "assert_requirement_holds(Policy, 'fifo'" in fifo.repro
    in_trace = {int(k) for step in fifo.trace for k in re.findall(r"key (\d+)", step)}
    in_trace |= {int(k) for step in fifo.trace
                 for a, b in re.findall(r"for k = (\d+), (\d+)", step) for k in (a, b)}
    in_trace |= {int(k) for step in fifo.trace
                 for a, b in re.findall(r"for k = (\d+)\.\.(\d+)", step)
                 for k in range(int(a), int(b) + 1)}
    named = {int(k) for k in re.findall(r"\[(\d+(?:, \d+)*)\]", fifo.message)
             for k in k.split(", ")}
    assert named and named <= in_trace, (fifo.message, fifo.trace)
    assert {int(k) for k in re.findall(r"key\((\d+)\)", fifo.repro)} <= in_trace, fifo.repro
    _fails_then_passes(fifo, FIXTURES / "fifo034.py", "MarkMovesKey", "faulty.py:FIFO034",
                       tmp_path)


def test_an_r10_snippet_calls_insert_with_a_req_context_and_no_adapter(
        fifo: FailureReport) -> None:
    inserts = re.findall(r"policy\.insert\((.*)\)", fifo.repro)
    assert inserts
    for arguments in inserts:  # key, chunk, req_context: as vLLM 0.34's manager calls it
        assert len(arguments.split(", ")) == 3, arguments
    assert "load_subject" not in fifo.repro and "subject." not in fifo.repro
    assert "Policy(cache_capacity=" in fifo.repro


# -- corpus policies of several kinds -----------------------------------------------------


CASES = [
    # (file, class, profile, engines, requirement, a correct target)
    pytest.param(FAULTY / "v01_ignores_protected.py", "core", ("fast",), "EVICT-UNPROTECTED",
                 "policyspec.reference:LRUCachePolicy", id="seed-api"),
    pytest.param(FAULTY / "insert_requires_session.py", "core", ("fast",), "API-NO-RAISE",
                 "policyspec.reference:LRUCachePolicy", id="a-call-raises"),
    pytest.param(FAULTY / "ttl_raises_on_clock_step_back.py", "core", ("fast",),
                 "API-CLOCK-STEP-BACK", "policyspec.reference:LRUCachePolicy",
                 id="a-should-that-raises"),
    pytest.param(HOOKS / "lru033_commits_head_first.py", "lru-0.33", ("stateful",),
                 "LRU033-FINISH-COMMIT", "policyspec.reference:LRU033CachePolicy",
                 id="r9-blamed-order"),  # (vLLM 0.33's profile drives it as R9)
    pytest.param(HOOKS / "hook034_access_frees_in_flight.py", "core", ("stateful",),
                 "HOOK-KEEPS-MEMBERSHIP", "policyspec.reference:LRU034CachePolicy",
                 id="r10-request-hook"),
    pytest.param(HOOKS / "hook_access_raises_on_absent.py", "core", ("stateful",),
                 "HOOK-TOTAL", "policyspec.reference:LRU034CachePolicy", id="hook-raises"),
    pytest.param(FAULTY / "cost_scan_all.py", "cost", ("cost",), "COST-EVICT-PINNED",
                 "policyspec.reference:LRUCachePolicy", id="measurement"),
    pytest.param(FAULTY / "clock_failed_evict_restamps.py", "core", ("metamorphic",),
                 "EVICT-ATOMIC", f"{ROOT / 'tests' / 'correct' / 'clock_value_scorer.py'}:Policy",
                 id="metamorphic"),
]


@pytest.mark.parametrize(("path", "profile", "engines", "requirement", "fixed"), CASES)
def test_the_snippet_fails_on_the_faulty_policy_and_passes_on_a_correct_one(
        path: Path, profile: str, engines: tuple[str, ...], requirement: str, fixed: str,
        tmp_path: Path) -> None:
    report = _check(f"{path}:Policy", profile, engines)
    failure = _failure(report, requirement)
    assert "snippet shown to fail: exit " in report.to_text()
    _inserts_as_the_manager_does(failure.repro, report.api)
    _fails_then_passes(failure, path, "Policy", fixed, tmp_path)


def test_a_call_that_never_returns_is_shown_with_the_check_s_call_time_limit(
        tmp_path: Path) -> None:
    path = ROOT / "tests" / "hostile" / "hang_in_evict.py"
    report = _check(f"{path}:Policy", "core", ("fast",), call_timeout=1.0)
    failure = _failure(report, "API-RETURNS")
    assert "call_timeout=1.0" in failure.repro
    # The assertion comes first: the calls written out after it would hang.
    assert failure.repro.index("assert_requirement_holds(") < failure.repro.index(
        "policy = Policy(")
    _fails_then_passes(failure, path, "Policy", "policyspec.reference:LRUCachePolicy", tmp_path)


def _inserts_as_the_manager_does(snippet: str, api: str) -> None:
    """R9 and R10 (vLLM 0.33, 0.34): ``insert(key, chunk, req_context)``
    with the storing request's context; earlier revisions without one."""
    context = r", (request\((\d+)\)|store)" if api in ("R9", "R10") else ""
    for arguments in re.findall(r"policy\.insert\((.*)\)", snippet):
        assert re.fullmatch(rf"key\((\d+|k)\), blocks\[(\d+|k)\]{context}", arguments), (
            api, arguments)
    if api in ("R9", "R10") and "request(" in snippet:
        assert "ReqContext(f'policyspec-req-{r}')" in snippet


# -- what the report says ---------------------------------------------------------------


def _local_faulty_class() -> type:
    class IgnoresProtected(LRUCachePolicy[Any, Any]):
        def evict(self, n: int, protected: Collection[Any]) -> Any:
            return super().evict(n, ())  # the fault: protected keys are victims too

    return IgnoresProtected


def test_a_class_no_fresh_process_can_import_is_said_plainly() -> None:
    cls = _local_faulty_class()
    assert snippet_target(f"{cls.__module__}:{cls.__qualname__}") is None
    report = run_check(subject_for_class(cls), get_profile("core"), engines=["fast"],
                       budget=3.0, seed=SEED)
    failure = _failure(report, "EVICT-UNPROTECTED")
    assert failure.repro_shown is False
    assert "class object a fresh process cannot import" in failure.repro_result
    assert "snippet NOT shown to fail (a MUST" in report.to_text()


def test_a_snippet_that_passes_or_hangs_or_raises_otherwise_is_not_shown() -> None:
    passed = show("print('fine')\n", "EVICT-ZERO", 60)
    assert not passed.shown and "exited 0" in passed.result
    hung = show("while True:\n    pass\n", "EVICT-ZERO", 1)
    assert not hung.shown and "did not end within 1 s" in hung.result
    other = show("raise AssertionError('EVICT-ATOMIC: no')\n", "EVICT-ZERO", 60)
    assert not other.shown and "not an AssertionError naming EVICT-ZERO" in other.result
    raised = show("raise KeyError(3)\n", "EVICT-ZERO", 60)
    assert not raised.shown and "KeyError: 3" in raised.result
    named = show("raise AssertionError('EVICT-ZERO: evict(0) returned None')\n",
                 "EVICT-ZERO", 60)
    assert named.shown and "AssertionError: EVICT-ZERO: evict(0)" in named.result
    # An error printed while the interpreter ends does not hide the assertion.
    late = show("import sys\n\nclass Late:\n    def __del__(self):\n"
                "        sys.stderr.write('Exception ignored in: x\\nKeyError: 1\\n')\n\n\n"
                "kept = Late()\nraise AssertionError('EVICT-ZERO: no')\n", "EVICT-ZERO", 60)
    assert late.shown, late.result


def test_every_report_format_says_whether_the_snippet_was_shown_to_fail(
        fifo: FailureReport, tmp_path: Path) -> None:
    status = RequirementStatus(fifo.requirement, "MUST", "fifo", fifo.title, "fail", 1)
    report = Report(target="x.py:P", profile="fifo", verdict="fail", requirements=[status],
                    failures=[fifo], stats={"seed": 0, "seconds": 1.0, "calls": 1,
                                            "steps": 1, "examples": 1}, api="R10")
    line = f"snippet shown to fail: {fifo.repro_result}"
    assert line in report.to_text()
    assert "| shown to fail |" in run_markdown(report)
    assert line in run_markdown(report)
    assert line in report.to_junit()
    assert "snippet shown to fail: exit " in render_run_page(report)
    document = json.loads(dumps(report))
    schema = json.loads((ROOT / "spec" / "report.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(document, schema)
    assert document["failures"][0]["repro_shown"] is True
    assert document["failures"][0]["repro_result"] == fifo.repro_result
    (tmp_path / "report.json").write_text(dumps(report), encoding="utf-8")
    again = load_report(tmp_path / "report.json")
    assert (again.failures[0].repro_shown, again.failures[0].repro_result) == (
        True, fifo.repro_result)


def test_a_snippet_of_a_sized_witness_gets_a_limit_that_grows_with_its_trace() -> None:
    """A sized witness fills thousands of keys, each step judged twice: on a
    loaded machine its snippet outran the limit of a short one and was
    reported not shown, though it failed as it should."""
    from policyspec.witness.shown import LIMIT_FACTOR, MIN_LIMIT, SHORT_TRACE, snippet_limit

    short = snippet_limit(10.0, 12)
    assert short == max(MIN_LIMIT, LIMIT_FACTOR * 10.0)
    assert snippet_limit(1.0, SHORT_TRACE) == MIN_LIMIT
    assert snippet_limit(10.0, 20 * SHORT_TRACE) == 20 * short
    assert snippet_limit(10.0, 4094) > snippet_limit(10.0, 4093) > short
