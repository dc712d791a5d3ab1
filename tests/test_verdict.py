"""No plain PASS with a MUST unjudged: the verdict rule,
written once in ``policyspec.reports.verdict``, and how every front end and format
shows the ``unjudged`` verdict."""

from __future__ import annotations

import json
import random
import re
import xml.etree.ElementTree as ET
from collections.abc import Collection
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from policyspec.adapters import subject_for_class
from policyspec.cli import main
from policyspec.exits import (
    EXIT_CONFORMS,
    EXIT_FAILS,
    EXIT_INCOMPLETE,
    EXIT_UNJUDGED,
    EXIT_USAGE,
)
from policyspec.options import CheckOptions
from policyspec.profiles import get_profile
from policyspec.reference.lru import LRUCachePolicy
from policyspec.registry import spec_dir
from policyspec.reports.html.run_page import render_run_page
from policyspec.reports.known_failing import apply_known_failing, read_known_failing
from policyspec.reports.markdown import run_markdown
from policyspec.reports.merge import merge_reports
from policyspec.reports.report import (
    FAIL,
    NA,
    NOT_TESTED,
    PASS,
    FailureReport,
    Report,
    RequirementStatus,
    load_report,
)
from policyspec.reports.report import dumps as report_json
from policyspec.reports.verdict import decide, exit_code, judged_strictly, unjudged_musts
from policyspec.session import check_target, run_check
from policyspec.testing import assert_requirement

HERE = Path(__file__).parent
LRU = "policyspec.reference:LRUCachePolicy"


def status(rid: str, state: str, level: str = "MUST", applies: bool = True,
           reason: str = "") -> RequirementStatus:
    return RequirementStatus(rid, level, "core", rid.title(), state, 0, reason, applies)


def failure(rid: str, level: str = "MUST") -> FailureReport:
    return FailureReport(rid, level, rid.title(), "it broke", ["1. insert key 0"], "", "fast")


# -- the rule ------------------------------------------------------------------------


def test_a_must_left_not_applicable_makes_the_verdict_unjudged_with_its_reason() -> None:
    verdict = decide([status("EVICT-ATOMIC", NA, reason="the policy is not deterministic"),
                      status("GET-ABSENT", PASS)], [], strict=False)
    assert verdict.name == "unjudged"
    assert verdict.reason == ("1 MUST not judged: EVICT-ATOMIC (n/a: the policy is not "
                              "deterministic)")


def test_a_must_the_revision_lacks_the_calls_for_stays_a_plain_na() -> None:
    statuses = [status("HOOK-TOTAL", NA, applies=False, reason="the policy has no hooks"),
                status("API-PROCESS-ALIVE", NOT_TESTED, applies=False), status("GET-ABSENT", PASS)]
    assert decide(statuses, [], strict=False).name == "pass"
    assert unjudged_musts(statuses) == []


def test_a_should_left_not_tested_leaves_a_pass() -> None:
    verdict = decide([status("GET-PURE", NOT_TESTED, level="SHOULD")], [], strict=True)
    assert verdict.name == "pass"


def test_a_must_failure_is_a_fail_beside_an_engine_error() -> None:
    verdict = decide([status("EVICT-UNPROTECTED", FAIL)], [failure("EVICT-UNPROTECTED")],
                     strict=False, errors=["manager: FlakyStrategyDefinition: ..."])
    assert (verdict.name, verdict.reason) == ("fail", "1 engine error listed above")


def test_an_engine_error_without_a_must_failure_is_an_error() -> None:
    verdict = decide([status("EVICT-ATOMIC", NA)], [failure("GET-PURE", "SHOULD")],
                     strict=False, errors=["fast: boom"])
    assert verdict.name == "error"
    assert exit_code(verdict.name, failures=True) == EXIT_FAILS
    assert exit_code(verdict.name, failures=False) == EXIT_USAGE


def test_strict_fails_on_a_should_and_a_stale_known_failing_entry_fails() -> None:
    should = [failure("GET-PURE", "SHOULD")]
    assert decide([], should, strict=False).name == "pass"
    assert decide([], should, strict=True).name == "fail"
    assert decide([], [], strict=False, stale=["known.txt:1: ..."]).name == "fail"


def test_the_plain_run_judged_strictly_is_the_strict_run() -> None:
    """Strictness changes the verdict only, so the pytest plugin judges one
    run both ways (a plain and a strict suite class of one policy): the
    plain run of a design that breaks a SHOULD, judged strictly, is the
    strict run's report."""
    gate = f"{HERE / 'correct' / 'admission_gate.py'}:Policy"
    options = CheckOptions(budget=0.3, seed=0, jobs=1, capacity=16, capacity_fixed=True)
    plain = check_target(gate, "core", options)
    strict = check_target(gate, "core", replace(options, strict=True))
    assert any(f.level == "SHOULD" for f in plain.failures), plain.failures
    judged = judged_strictly(plain)
    assert (plain.verdict, strict.verdict) == ("pass", "fail")
    assert (judged.verdict, judged.verdict_reason) == (strict.verdict, strict.verdict_reason)
    assert judged.stats["strict"] and not plain.stats["strict"]
    assert [(f.requirement, f.trace) for f in judged.failures] == [
        (f.requirement, f.trace) for f in strict.failures]
    assert judged_strictly(judged) is judged


def test_a_strict_judgement_keeps_a_fail_s_reason_and_fails_an_incomplete_run() -> None:
    def report(verdict: str, reason: str, *failures: FailureReport) -> Report:
        return Report("t:P", "core", verdict, [], list(failures), {"strict": False},
                      errors=["fast: boom"] if "error" in reason else [],
                      verdict_reason=reason)

    failed = report("fail", "1 engine error listed above", failure("EVICT-UNPROTECTED"))
    assert (judged_strictly(failed).verdict, judged_strictly(failed).verdict_reason) == (
        "fail", "1 engine error listed above")
    cut = "the time limit stopped the run at 40% of its work"
    assert judged_strictly(report("incomplete", cut)).verdict_reason == cut
    assert judged_strictly(report("incomplete", cut, failure("GET-PURE", "SHOULD"))).verdict \
        == "fail"


def test_a_failure_outranks_an_interruption_which_outranks_unjudged() -> None:
    unjudged = [status("EVICT-ATOMIC", NOT_TESTED)]
    assert decide(unjudged, [failure("EVICT-ATOMIC")], strict=False,
                  interrupted=True).name == "fail"
    assert decide(unjudged, [], strict=False, interrupted=True).name == "interrupted"


def test_each_verdict_has_its_exit_code() -> None:
    assert [exit_code(v, failures=False) for v in ("pass", "fail", "unjudged", "interrupted")] \
        == [EXIT_CONFORMS, EXIT_FAILS, EXIT_UNJUDGED, EXIT_FAILS]
    assert EXIT_UNJUDGED not in (EXIT_CONFORMS, EXIT_FAILS, EXIT_USAGE)


def test_the_rule_is_written_once() -> None:
    """Issue 29: one place says that a MUST failure (or a SHOULD under
    --strict) fails a run; every other module calls it."""
    src = HERE.parent / "src" / "policyspec"
    rule = re.compile(r'"MUST" in levels|verdict = "fail"|strict and [\w.]*level == "SHOULD"'
                      r'|strict or [\w.]*level == "MUST"')
    spelled = [path.relative_to(src).as_posix() for path in src.rglob("*.py")
               if rule.search(path.read_text(encoding="utf-8"))]
    assert spelled == ["reports/verdict.py"]


# -- a run whose MUSTs stay unjudged --------------------------------------------------


@pytest.fixture(scope="module")
def unjudged() -> Report:
    """The reference LRU checked by the fast engine alone: nothing fails, and
    the MUSTs only other engines exercise stay not tested."""
    return run_check(subject_for_class(LRUCachePolicy), get_profile("core"), budget=1.0,
                     seed=3, engines=("fast",))


def test_a_run_that_leaves_musts_not_tested_is_unjudged_in_every_format(
        unjudged: Report) -> None:
    assert unjudged.verdict == "unjudged" and not unjudged.failures
    open_ = [s.id for s in unjudged_musts(unjudged.requirements)]
    assert "CLEAR-FORGETS-KEYS" in open_ and "API-PROCESS-ALIVE" not in open_
    assert unjudged.verdict_reason.startswith(f"{len(open_)} MUSTs not judged: ")
    last = unjudged.to_text().rstrip().splitlines()[-1]
    assert last == f"verdict: UNJUDGED ({unjudged.verdict_reason})"
    document = json.loads(report_json(unjudged))
    jsonschema.validate(document, json.loads((spec_dir() / "report.schema.json").read_text()))
    assert (document["verdict"], document["verdict_reason"]) == (
        "unjudged", unjudged.verdict_reason)
    assert {r["id"]: r["applies"] for r in document["requirements"]}["HOOK-TOTAL"] is False
    suite = ET.fromstring(unjudged.to_junit())
    [case] = [c for c in suite if c.get("name") == "verdict"]
    node = case.find("failure")
    assert node is not None and "CLEAR-FORGETS-KEYS" in (node.get("message") or "")
    assert int(suite.get("failures") or 0) == 1
    page = render_run_page(unjudged)
    assert "Verdict: UNJUDGED" in page and "CLEAR-FORGETS-KEYS (not tested" in page
    assert f"Verdict UNJUDGED: {unjudged.verdict_reason}" in run_markdown(unjudged)


def test_the_pytest_plugin_fails_an_unjudged_must_and_skips_a_plain_na(
        unjudged: Report) -> None:
    with pytest.raises(pytest.fail.Exception, match=r"CLEAR-FORGETS-KEYS \(MUST\) was not judged"):
        assert_requirement(unjudged, "CLEAR-FORGETS-KEYS")
    with pytest.raises(pytest.skip.Exception):
        assert_requirement(unjudged, "HOOK-TOTAL")


def test_a_merged_report_judges_a_must_one_shard_judged(unjudged: Report, tmp_path: Path
                                                         ) -> None:
    def shard(k: int, judged: bool) -> Report:
        report = _copy(unjudged, tmp_path)
        report.stats["shard"] = f"{k}/2"
        for s in report.requirements:
            if judged and s.status == NOT_TESTED and s.applies:
                s.status, s.checks = PASS, 1
        return report

    merged = merge_reports([shard(1, judged=False), shard(2, judged=True)])
    assert merged.verdict == "pass", merged.verdict_reason
    alone = merge_reports([shard(1, judged=False), shard(2, judged=False)])
    assert (alone.verdict, alone.verdict_reason) == ("unjudged", unjudged.verdict_reason)


def test_known_failing_keeps_a_run_unjudged(unjudged: Report, tmp_path: Path) -> None:
    listed = tmp_path / "known.txt"
    listed.write_text("GET-ABSENT  # passes here: stale\n")
    report = _copy(unjudged, tmp_path)
    apply_known_failing(report, *read_known_failing(str(listed)))
    assert report.verdict == "fail"  # a stale entry fails the run
    listed.write_text("")
    report = _copy(unjudged, tmp_path)
    apply_known_failing(report, *read_known_failing(str(listed)))
    assert report.verdict == "unjudged" and report.verdict_reason == unjudged.verdict_reason


def test_check_exits_3_on_an_unjudged_run(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", LRU, "--engine", "fast", "--budget", "1", "--jobs", "1", "-q"])
    out = capsys.readouterr().out
    assert code == EXIT_UNJUDGED, out
    assert out.rstrip().splitlines()[-1].startswith("verdict: UNJUDGED (")


class EntropyEvictions(LRUCachePolicy[Any, Any]):
    """Evicts random eligible keys drawn from the operating system's entropy,
    which no seed controls: correct, but two fresh instances differ, so the
    relations that compare runs cannot judge it."""

    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.rng = random.SystemRandom()

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        eligible = [k for k in self.evictable_blocks if k not in protected]
        if len(eligible) < n:
            return None
        victims = self.rng.sample(eligible, n)
        for key in victims:
            del self.evictable_blocks[key]
        return [(key, self.blocks.pop(key)) for key in victims]


def test_a_policy_no_seed_controls_is_unjudged_not_passed() -> None:
    report = run_check(subject_for_class(EntropyEvictions), get_profile("core"), budget=2.0,
                       seed=3, engines=("metamorphic",))
    na = {s.id for s in report.requirements if s.status == NA and s.applies}
    assert {"EVICT-ATOMIC", "EVICT-ZERO", "CLEAR-FORGETS-KEYS"} <= na
    assert report.verdict == "unjudged"
    assert "EVICT-ATOMIC (n/a: the policy is not deterministic" in report.verdict_reason


def _copy(report: Report, tmp_path: Path) -> Report:
    """A copy of ``report`` as a reader of its JSON file gets it."""
    path = tmp_path / "copy.json"
    path.write_text(report_json(report))
    return load_report(path)


# -- a run the time limit stops -------------------------------------------------------


@pytest.fixture(scope="module")
def incomplete() -> Report:
    """The reference LRU with a wall-time cap that has passed before the
    engines start: no work is done, nothing fails, and that is no pass."""
    return run_check(subject_for_class(LRUCachePolicy), get_profile("core"),
                     options=CheckOptions(budget=2.0, seed=3, jobs=1, time_limit=1e-6))


def test_a_run_the_time_limit_stops_is_incomplete_in_every_format(incomplete: Report,
                                                                  tmp_path: Path) -> None:
    assert incomplete.verdict == "incomplete" and not incomplete.failures
    assert "0 of " in incomplete.verdict_reason and "planned examples ran" in \
        incomplete.verdict_reason, incomplete.verdict_reason
    assert exit_code(incomplete.verdict, failures=False) == EXIT_INCOMPLETE == 4
    last = incomplete.to_text().rstrip().splitlines()[-1]
    assert last == f"verdict: INCOMPLETE ({incomplete.verdict_reason})"
    document = json.loads(report_json(incomplete))
    jsonschema.validate(document, json.loads((spec_dir() / "report.schema.json").read_text()))
    assert document["verdict"] == "incomplete"
    suite = ET.fromstring(incomplete.to_junit())
    [case] = [c for c in suite if c.get("name") == "verdict"]
    assert case.find("failure") is not None
    assert "Verdict: INCOMPLETE" in render_run_page(incomplete)
    assert f"Verdict INCOMPLETE: {incomplete.verdict_reason}" in run_markdown(incomplete)
    # In pytest, a requirement that held in the work that ran still fails.
    ran = _copy(incomplete, tmp_path)
    ran.requirements[0].status, ran.requirements[0].checks = PASS, 1
    with pytest.raises(pytest.fail.Exception, match="INCOMPLETE"):
        assert_requirement(ran, ran.requirements[0].id)


def test_check_exits_4_when_the_time_limit_stops_it(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", LRU, "--budget", "1", "--jobs", "1", "-q", "--time-limit", "0.000001"])
    out = capsys.readouterr().out
    assert code == EXIT_INCOMPLETE, out
    assert out.rstrip().splitlines()[-1].startswith("verdict: INCOMPLETE (")
