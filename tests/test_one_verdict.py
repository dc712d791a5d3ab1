"""One verdict rule for every command: ``prove`` judges its obligations by
``policyspec.reports.verdict.decide`` as ``check`` judges requirements, so it
can say unjudged, incomplete and interrupted; an interrupted check is
assembled as one, not patched afterwards; and no command writes an exit
code of its own."""

from __future__ import annotations

import ast
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from policyspec import exits
from policyspec.cli import main
from policyspec.prove import crosshair_run
from policyspec.prove.counterexamples import Finding
from policyspec.prove.crosshair_run import (
    CONFIRMED,
    COUNTEREXAMPLE,
    ERROR,
    INTERRUPTED,
    NOT_CONFIRMED,
    SKIPPED,
    STOPPED,
    Budget,
    Job,
    run_jobs,
)
from policyspec.prove.proof_report import ObligationResult, ProofReport
from policyspec.reports import verdict as rule
from policyspec.reports.report import load_report

SRC = Path(__file__).resolve().parents[1] / "src" / "policyspec"
REFERENCE = "policyspec.reference:LRUCachePolicy"


def _proof(*statuses: str, finding: bool = False, strict: bool = False) -> ProofReport:
    report = ProofReport("t", "m", ["b"], Budget(10, len(statuses), 1), target=REFERENCE,
                         profile="lru", api="R3", strict=strict)
    report.results = [ObligationResult(f"op{i}", status, 1.0, 5.0, 1, 0)
                      for i, status in enumerate(statuses)]
    if finding:
        # A hand-written pair's counterexample: no minimised trace, yet counted.
        report.findings = [Finding("op0", "EVICT-UNPROTECTED", ["story"], "def test(): ...",
                                   True, "the pair")]
    return report


@pytest.mark.parametrize("statuses, finding, verdict, code", [
    ((CONFIRMED, CONFIRMED), False, rule.PASS, exits.EXIT_CONFORMS),
    ((CONFIRMED, NOT_CONFIRMED), False, rule.UNJUDGED, exits.EXIT_UNJUDGED),
    ((NOT_CONFIRMED,), False, rule.UNJUDGED, exits.EXIT_UNJUDGED),
    ((CONFIRMED, STOPPED), False, rule.INCOMPLETE, exits.EXIT_INCOMPLETE),
    ((NOT_CONFIRMED, STOPPED), False, rule.INCOMPLETE, exits.EXIT_INCOMPLETE),
    ((CONFIRMED, ERROR), False, rule.ERROR, exits.EXIT_USAGE),
    ((ERROR, STOPPED), False, rule.ERROR, exits.EXIT_USAGE),
    ((CONFIRMED, INTERRUPTED), False, rule.INTERRUPTED, exits.EXIT_FAILS),
    ((INTERRUPTED, ERROR, STOPPED), False, rule.INTERRUPTED, exits.EXIT_FAILS),
    ((COUNTEREXAMPLE, STOPPED), True, rule.FAIL, exits.EXIT_FAILS),
    ((COUNTEREXAMPLE, INTERRUPTED), True, rule.FAIL, exits.EXIT_FAILS),
    ((COUNTEREXAMPLE, SKIPPED), True, rule.FAIL, exits.EXIT_FAILS),
    # A CrossHair counterexample the replay did not confirm counts for nothing.
    ((COUNTEREXAMPLE, CONFIRMED), False, rule.UNJUDGED, exits.EXIT_UNJUDGED),
])
def test_prove_is_judged_by_the_rule_every_command_shares(
    statuses: Sequence[str], finding: bool, verdict: str, code: int, tmp_path: Path,
) -> None:
    proof = _proof(*statuses, finding=finding)
    assert (proof.verdict, proof.exit_code) == (verdict, code), proof.to_text()
    assert f"verdict: {verdict.upper()}" in proof.to_text()
    report = proof.to_report()
    assert (report.verdict, report.verdict_reason) == (proof.verdict, proof.judged.reason)
    # Read back, the report gets the verdict its run got.
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report.to_json()))
    back = load_report(path)
    again = rule.decide(back.requirements, back.failures, strict=False, errors=back.errors,
                        interrupted=back.verdict == rule.INTERRUPTED,
                        incomplete=back.verdict_reason if back.verdict == rule.INCOMPLETE
                        else None)
    assert again.name == verdict
    assert rule.exit_code(back.verdict, bool(back.failures)) == code


def test_a_should_counterexample_counts_only_under_strict() -> None:
    proof = _proof(COUNTEREXAMPLE, CONFIRMED, finding=True)
    proof.findings[0].level = "SHOULD"
    assert proof.verdict == rule.UNJUDGED  # the obligation's row is not established
    proof.strict = True
    assert (proof.verdict, proof.exit_code) == (rule.FAIL, exits.EXIT_FAILS)


def test_the_reasons_name_what_was_left() -> None:
    assert "op1" in _proof(CONFIRMED, STOPPED).judged.reason
    unjudged = _proof(NOT_CONFIRMED, CONFIRMED, NOT_CONFIRMED).judged.reason
    assert "PROVE-OP0" in unjudged and "PROVE-OP2" in unjudged and "PROVE-OP1" not in unjudged


# -- CrossHair children stopped by Ctrl-C ----------------------------------------

_CONFIRMS = "print('/x/ops.py:1: info: Confirmed over all paths.')"
_INTERRUPTS = ("import os, signal, time; os.kill(os.getppid(), signal.SIGINT); "
               "time.sleep(120)")


def _fake_children(monkeypatch: pytest.MonkeyPatch, scripts: dict[str, str]) -> None:
    """Children that print what CrossHair would, or send their parent a
    Ctrl-C and wait to be stopped."""
    def command(job: Job, share: float, iterations: int | None = None) -> list[str]:
        return [sys.executable, "-c", scripts[job.name]]

    monkeypatch.setattr(crosshair_run, "_command", command)


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_a_ctrl_c_stops_every_child_and_keeps_what_reported(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, workers: int,
) -> None:
    marker = tmp_path / "a.pid"
    # "a" confirms and leaves its pid; "b" interrupts once "a" has been
    # reaped (so "a" reported, whatever the number of workers).
    first = f"import os; {_CONFIRMS}; open({str(marker)!r}, 'w').write(str(os.getpid()))"
    after_first = (
        "import os, time\n"
        f"while not os.path.exists({str(marker)!r}) or not open({str(marker)!r}).read():\n"
        "    time.sleep(0.01)\n"
        f"pid = int(open({str(marker)!r}).read())\n"
        "while True:\n"
        "    try:\n"
        "        os.kill(pid, 0)\n"
        "    except ProcessLookupError:\n"
        "        break\n"
        "    time.sleep(0.01)\n"
        + _INTERRUPTS.replace("; ", "\n"))
    _fake_children(monkeypatch, {"a": first, "b": after_first, "c": _CONFIRMS,
                                 "d": _CONFIRMS})
    jobs = [Job(name, name, "asserts") for name in "abcd"]
    results = run_jobs(jobs, Budget(30, 4, workers))
    statuses = [r.status for r in results]
    assert statuses[:2] == [CONFIRMED, INTERRUPTED]
    # What had not reported when the interrupt came says so; nothing is lost.
    assert all(s in (CONFIRMED, INTERRUPTED) for s in statuses[2:])
    assert [r.job.name for r in results] == list("abcd")
    if workers == 1:
        assert statuses[2:] == [INTERRUPTED, INTERRUPTED]


def test_prove_interrupted_reports_what_ran_and_exits_1(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    # prove runs insert before get (the obligations with the fewest paths first).
    _fake_children(monkeypatch, {"insert": _CONFIRMS, "get": _INTERRUPTS})
    out = tmp_path / "r.json"
    code = main(["prove", REFERENCE, "--profile", "lru", "--only", "get", "--only", "insert",
                 "--jobs", "1", "-q", "--json-report", str(out)])
    text = capsys.readouterr().out
    assert code == exits.EXIT_FAILS, text
    assert "verdict: INTERRUPTED" in text
    data = json.loads(out.read_text())
    assert data["verdict"] == rule.INTERRUPTED
    rows = {r["id"]: r["status"] for r in data["requirements"]}
    assert rows == {"PROVE-GET": "not-tested", "PROVE-INSERT": "pass"}


def test_prove_stopped_by_its_deadline_is_incomplete_exit_4(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    # A deadline already past when the second obligation would start: it is
    # reported as stopped, the run as incomplete, whatever the first did.
    monkeypatch.setattr(Budget, "deadline", property(lambda self: 0.0))
    _fake_children(monkeypatch, {"get": _CONFIRMS, "insert": _CONFIRMS})
    out = tmp_path / "r.json"
    code = main(["prove", REFERENCE, "--profile", "lru", "--only", "get", "--only", "insert",
                 "--jobs", "1", "-q", "--json-report", str(out)])
    text = capsys.readouterr().out
    assert code == exits.EXIT_INCOMPLETE, text
    assert "verdict: INCOMPLETE" in text
    data = json.loads(out.read_text())
    assert data["verdict"] == rule.INCOMPLETE and "deadline" in data["verdict_reason"]
    assert data["stats"]["prove"]["result"] == "stopped"


@pytest.mark.parametrize("scripts, code, verdict", [
    ({"get": _CONFIRMS, "insert": _CONFIRMS}, exits.EXIT_CONFORMS, "PASS"),
    ({"get": _CONFIRMS, "insert": "print('/x/o.py:1: info: Not confirmed.')"},
     exits.EXIT_UNJUDGED, "UNJUDGED"),
    ({"get": "import sys; sys.exit(1)", "insert": _CONFIRMS}, exits.EXIT_USAGE, "ERROR"),
])
def test_prove_exits_as_its_verdict_says(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    scripts: dict[str, str], code: int, verdict: str,
) -> None:
    _fake_children(monkeypatch, scripts)
    got = main(["prove", REFERENCE, "--profile", "lru", "--only", "get", "--only", "insert",
                "--jobs", "1", "-q"])
    text = capsys.readouterr().out
    assert got == code and f"verdict: {verdict}" in text, text


# -- no exit code of a command's own ----------------------------------------------


def _literal_exit_codes(path: Path) -> list[str]:
    """Integer literals a module returns, passes to an exit, or raises as
    SystemExit."""
    found: list[int] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        values: list[ast.expr | None] = []
        if isinstance(node, ast.Return):
            values.append(node.value)
        elif isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else (
                node.func.id if isinstance(node.func, ast.Name) else "")
            if name in ("exit", "_exit", "SystemExit"):
                values.extend(node.args[:1])
        while values:
            value = values.pop()
            if isinstance(value, ast.IfExp):
                values.extend((value.body, value.orelse))
            elif isinstance(value, ast.Constant) and type(value.value) is int:
                found.append(getattr(node, "lineno", 0))
                break
    return [f"{path.name}:{line}" for line in sorted(found)]


def test_no_command_writes_a_literal_exit_code() -> None:
    modules = [*sorted((SRC / "commands").glob("*.py")), SRC / "cli.py"]
    assert len(modules) > 5
    assert [spot for path in modules for spot in _literal_exit_codes(path)] == []


def test_the_literal_exit_code_finder_finds_them(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import sys\n"
                   "def a() -> int:\n    return 2\n"
                   "def b() -> None:\n    sys.exit(1)\n"
                   "def c() -> None:\n    raise SystemExit(4)\n"
                   "def d(x: bool) -> int:\n    return 1 if x else 0\n"
                   "def e() -> bool:\n    return True\n")
    assert _literal_exit_codes(bad) == ["bad.py:3", "bad.py:5", "bad.py:7", "bad.py:9"]


# -- an interrupted check is assembled as one ------------------------------------


def _assembled(*, interrupted: bool, capped: bool = False, failing: bool = False,
               error: str | None = None) -> tuple[str, str]:
    from collections import Counter

    from policyspec.adapters import subject_for_class
    from policyspec.profiles import get_profile
    from policyspec.reference.lru import LRUCachePolicy
    from policyspec.registry import requirements_for
    from policyspec.reports.build import assemble
    from policyspec.reports.report import FailureReport
    from policyspec.run.result import EngineRun

    profile = get_profile("core")
    subject = subject_for_class(LRUCachePolicy)
    every = Counter({req.id: 1 for req in requirements_for(profile.includes)})
    run = EngineRun("fast", checked=every, examples=5 if capped else 10, planned=10,
                    capped=capped, error=error)
    failures = [FailureReport("EVICT-UNPROTECTED", "MUST", "t", "m", [], "", "fast")] \
        if failing else []
    report = assemble(subject, profile, [run], failures, seed=0, strict=False, capacity=4,
                      seconds=0.0, interrupted=interrupted)
    return report.verdict, report.verdict_reason


@pytest.mark.parametrize("kind, verdict", [
    ({}, rule.INTERRUPTED),
    ({"capped": True}, rule.INTERRUPTED),
    ({"error": "boom"}, rule.INTERRUPTED),
    ({"failing": True}, rule.FAIL),
])
def test_an_interrupted_run_is_judged_with_everything_else(
    kind: dict[str, object], verdict: str,
) -> None:
    got, reason = _assembled(interrupted=True, **kind)  # type: ignore[arg-type]
    assert got == verdict
    if verdict == rule.FAIL:
        assert "interrupted before the end" in reason
    # The same run not interrupted gets the verdict of its other inputs.
    assert _assembled(interrupted=False, **kind)[0] != rule.INTERRUPTED  # type: ignore[arg-type]


def _verdict_writes(path: Path) -> list[str]:
    """Places that set a report's verdict from anything but a decided
    ``Verdict``'s name (``<decided>.name``)."""
    def decided(value: ast.expr) -> bool:
        if isinstance(value, ast.Tuple):
            return decided(value.elts[0])
        return isinstance(value, ast.Attribute) and value.attr == "name"

    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                first = target.elts[0] if isinstance(target, ast.Tuple) else target
                if isinstance(first, ast.Attribute) and first.attr == "verdict" \
                        and not decided(node.value):
                    found.append(f"{path.name}:{node.lineno}")
        elif isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg == "verdict" and not decided(keyword.value):
                    found.append(f"{path.name}:{node.lineno}")
    return found


def test_every_verdict_a_report_gets_is_decided_by_the_rule() -> None:
    reading = {SRC / "reports" / "report.py"}  # a report read back keeps its verdict
    spots = [spot for path in sorted(SRC.rglob("*.py")) if path not in reading
             for spot in _verdict_writes(path)]
    assert spots == []


def test_the_verdict_write_finder_finds_them(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("report.verdict = 'pass'\n"
                   "report.verdict, report.verdict_reason = 'interrupted', ''\n"
                   "Report(verdict='fail')\n"
                   "report.verdict = decided.name\n"
                   "Report(verdict=decided.name)\n")
    assert _verdict_writes(bad) == ["bad.py:1", "bad.py:2", "bad.py:3"]


@pytest.mark.parametrize("stopped_shard", [1, 2])
def test_a_merge_and_known_failing_keep_a_run_incomplete(
    tmp_path: Path, stopped_shard: int,
) -> None:
    from policyspec.reports.known_failing import apply_known_failing, read_known_failing
    from policyspec.reports.merge import merge_reports

    shards = []
    for k in (1, 2):
        statuses = (CONFIRMED, STOPPED) if k == stopped_shard else (CONFIRMED, CONFIRMED)
        shard = _proof(*statuses).to_report()
        shard.stats["shard"] = f"{k}/2"
        shards.append(shard)
    merged = merge_reports(shards)
    assert merged.verdict == rule.INCOMPLETE
    assert merged.verdict_reason.startswith(f"shard {stopped_shard}/2: the deadline")
    listed = tmp_path / "known.txt"
    listed.write_text("")
    apply_known_failing(merged, *read_known_failing(str(listed)))
    assert merged.verdict == rule.INCOMPLETE and "deadline" in merged.verdict_reason


def test_a_part_left_unjudged_is_weighed_by_the_rule_like_an_open_must() -> None:
    from policyspec.reports.report import FailureReport, RequirementStatus

    part = ["core: no eviction was compared"]
    assert rule.decide([], [], strict=False, unjudged=part) == rule.Verdict(rule.UNJUDGED,
                                                                             part[0])
    open_must = RequirementStatus("GET-ABSENT", "MUST", "core", "t", "not-tested", 0, "why")
    both = rule.decide([open_must], [], strict=False, unjudged=part)
    assert both.name == rule.UNJUDGED and both.reason.startswith(part[0] + "; 1 MUST")
    failing = [FailureReport("GET-ABSENT", "MUST", "t", "m", [], "", "history")]
    assert rule.decide([], failing, strict=False, unjudged=part).name == rule.FAIL
    assert rule.decide([], [], strict=False, unjudged=part, incomplete="x").name \
        == rule.INCOMPLETE
    assert rule.decide([], [], strict=False).name == rule.PASS


@pytest.mark.parametrize("stopped, word", [(INTERRUPTED, "INTERRUPTED"),
                                           (STOPPED, "INCOMPLETE")])
def test_the_suite_fails_a_requirement_that_held_in_a_run_stopped_early(
    stopped: str, word: str,
) -> None:
    from policyspec.testing import assert_requirement

    report = _proof(CONFIRMED, stopped).to_report()
    with pytest.raises(pytest.fail.Exception, match=word):
        assert_requirement(report, "PROVE-OP0")
    assert_requirement(_proof(CONFIRMED, CONFIRMED).to_report(), "PROVE-OP0")


def test_a_command_interrupted_before_it_reports_exits_as_interrupted(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    from policyspec.commands import vectors

    def interrupted(args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(vectors, "run", interrupted)
    assert main(["vectors", "--out", str(tmp_path)]) == rule.exit_code(rule.INTERRUPTED, False)
    assert capsys.readouterr().err.strip() == "policyspec: interrupted"
