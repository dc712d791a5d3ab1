"""The mutation benchmark's own logic (the benchmark itself is the nightly
job, benchmarks/README.md): which mutants count as annotation-only, how
the killing ids are read, that every ledger entry still names a mutant
cosmic-ray makes of the current file (so an edit of a policy cannot leave
stale verdicts behind), and, small, the judging of a killed mutant: its
verdict, its blame replayed on the witness and its snippet run on the
mutant and the original, for the authored FIFO and for vLLM's LRU as its
wheel ships it (skipped, saying why, when the wheel cannot be had)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # benchmarks/ is a package at the repository root
    sys.path.insert(0, str(ROOT))

from benchmarks.mutation import TARGETS, Target, annotation_only, killed_by  # noqa: E402
from benchmarks.mutation_ledger import MutantId, load_ledger  # noqa: E402

FUTURE = "from __future__ import annotations\n"


def test_a_change_inside_annotations_only_is_annotation_only() -> None:
    original = FUTURE + "def f(x: int | None) -> int | None:\n    y: int | None = x\n    return y\n"
    mutated = FUTURE + "def f(x: int & None) -> int - None:\n    y: int ^ None = x\n    return y\n"
    assert annotation_only(original, mutated)


def test_a_change_in_code_is_not_annotation_only() -> None:
    original = FUTURE + "def f(x: int) -> bool:\n    return isinstance(x, int | str)\n"
    mutated = FUTURE + "def f(x: int) -> bool:\n    return isinstance(x, int & str)\n"
    assert not annotation_only(original, mutated)


def test_annotations_count_without_postponed_evaluation() -> None:
    original = "def f(x: int | None) -> None:\n    pass\n"
    mutated = "def f(x: int & None) -> None:\n    pass\n"
    assert not annotation_only(original, mutated)  # evaluated at def time: a real change


def test_killing_ids_are_read_from_the_fail_lines() -> None:
    output = ("  PASS       EVICT-ZERO  MUST ...\n  FAIL       EVICT-EXACT-N  MUST ...\n"
              "FAIL EVICT-EXACT-N (MUST): ...\n  FAIL       LRU-LIVENESS  MUST ...\n")
    assert killed_by(output) == ("EVICT-EXACT-N", "LRU-LIVENESS")
    error = "policyspec: error: cannot import x"
    assert killed_by(error + "\n") == (error,)


def _stale(targets: list[Target], wheel_path: Path | None) -> list[str]:
    from benchmarks.mutation import mutants_of

    ledger = load_ledger()
    files = {t.file_id for t in targets}
    made = {m.id for target in targets for m in mutants_of(target, wheel_path)}
    return [m.short() for m in [*ledger.equivalent, *ledger.missing]
            if m.file in files and m not in made]


def test_every_ledger_entry_names_a_mutant_of_the_current_file() -> None:
    pytest.importorskip("cosmic_ray", reason="the mutation extra is not installed")
    ledger = load_ledger()
    stale = _stale([t for t in TARGETS if not t.wheel], None)
    assert not stale, f"ledger entries that no longer match any mutant: {stale}"
    known = {t.file_id for t in TARGETS}
    strays = [m.short() for m in [*ledger.equivalent, *ledger.missing] if m.file not in known]
    assert not strays, f"ledger entries of no target: {strays}"
    assert not set(ledger.equivalent) & set(ledger.missing), "a mutant with two verdicts"
    assert all(reason.strip() for reason, _ in ledger.equivalent.values())
    assert all(check.strip() for check in ledger.missing.values())


def test_every_ledger_entry_of_vllms_files_names_a_mutant_of_the_wheel(
    vllm_wheel: Path,
) -> None:
    stale = _stale([t for t in TARGETS if t.wheel], vllm_wheel)
    assert not stale, f"ledger entries that no longer match any mutant: {stale}"


def test_further_option_sets_are_separate_checks_of_the_same_scratch_copy(
    tmp_path: Path,
) -> None:
    from benchmarks.mutation import check_commands, profile_of

    plain = Target("x.py", "m:C", "core")
    [only] = check_commands(plain, tmp_path, "4", tmp_path / "r.json")
    assert only[1:5] == ["-m", "policyspec", "check", "m:C"]
    assert only[-2:] == ["--json-report", str(tmp_path / "r.json")]
    assert profile_of(only) == "core"
    chained = Target("x.py", "{file}:C", "lru-0.34", ("--capacity", "8"),
                     (("--profile", "core"), ("--engine", "size")))
    first, second, third = check_commands(chained, tmp_path, "4", tmp_path / "r.json")
    assert first[4] == second[4] == f"{tmp_path / 'x.py'}:C"  # the scratch copy, by path
    assert "--capacity" in first and "--capacity" not in second
    assert [profile_of(c) for c in (first, second, third)] == ["lru-0.34", "core", "lru-0.34"]


def test_an_engine_only_option_set_passes_when_it_only_leaves_musts_unjudged() -> None:
    from benchmarks.mutation import EXIT_UNJUDGED, _passes

    quiet: dict[str, Any] = {"verdict": "unjudged", "failures": []}
    failing: dict[str, Any] = {"verdict": "fail", "failures": [{"requirement": "X"}]}
    assert _passes(0, None, further=False)
    assert _passes(EXIT_UNJUDGED, quiet, further=True)
    assert not _passes(EXIT_UNJUDGED, quiet, further=False)  # the main check must judge
    assert not _passes(EXIT_UNJUDGED, None, further=True)  # no report: not shown
    assert not _passes(1, failing, further=True)
    assert not _passes(2, None, further=True)


def test_an_entry_shared_by_two_alike_mutants_stands_while_one_survives() -> None:
    from benchmarks.mutation import FileResult, Outcome, ledger_problems
    from benchmarks.mutation_ledger import Ledger

    # a made-up entry: the ledger's own entries come and go as checks sharpen
    both = MutantId("clock034.py", "evict", "ReplaceContinueWithBreak", "continue", "break")
    ledger = Ledger({}, {both: "a sharper check"})
    assert ledger.classify(both).kind == "missing-check"
    clock = next(t for t in TARGETS if t.path.endswith("clock034.py"))
    killed = Outcome(both, "", "killed", ("HOOK-KEEPS-MEMBERSHIP",), verdict="fail")
    survived = Outcome(both, "", "survived")
    assert not ledger_problems([FileResult(clock, [killed, survived])], ledger)
    [problem] = ledger_problems([FileResult(clock, [killed])], ledger)
    assert "listed as missing-check but killed" in problem


# -- the authored FIFO, two mutants at a small budget ------------------------------

FIFO = next(t for t in TARGETS if t.path.endswith("fifo034.py"))
KILLED = MutantId("fifo034.py", "evict", "AddNot", "if n <= 0:", "if not n <= 0:")
EQUIVALENT = MutantId("fifo034.py", "evict", "ReplaceComparisonOperator_LtE_Eq", "if n <= 0:",
                      "if n == 0:")


def test_a_killed_fifo_mutant_is_judged_whole_and_a_survivor_is_in_the_ledger() -> None:
    pytest.importorskip("cosmic_ray", reason="the mutation extra is not installed")
    from benchmarks.mutation import Tally, ledger_problems, run_target

    result = run_target(FIFO, budget="1", timeout=300.0, limit=None, say=lambda _: None,
                        select={KILLED, EQUIVALENT}.__contains__)
    by_id = {o.mutant: o for o in result.outcomes}
    assert set(by_id) == {KILLED, EQUIVALENT}
    killed = by_id[KILLED]
    # evict(0) no longer returns [] at once: it walks on and takes every idle key
    assert killed.status == "killed" and killed.verdict == "fail", killed
    assert killed.killed_by and not killed.killed_with_error
    assert killed.blame_right is True, killed.blame
    assert killed.snippet is not None and killed.snippet.shown, killed.snippet
    survived = by_id[EQUIVALENT]
    assert survived.status == "survived", survived  # evict's n is never negative
    ledger = load_ledger()
    assert ledger.classify(EQUIVALENT).kind == "equivalent"
    assert not ledger_problems([result], ledger)
    tally = Tally.of(result, ledger)
    assert (tally.mutants, tally.killed, tally.killed_error, tally.blame_right,
            tally.snippet_shown, tally.unclassified) == (2, 1, 0, 1, 1, 0)


def _judge(tmp_path: Path, policy: Path, report: dict[str, Any], profile: str
           ) -> list[dict[str, Any]]:
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "mutation_judge.py"), str(path),
         f"{policy}:FIFOCachePolicy", profile, "0"],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")}, capture_output=True, text=True,
        check=True)
    failures: list[dict[str, Any]] = json.loads(done.stdout)["failures"]
    return failures


@pytest.mark.parametrize("named, right", [
    ("EVICT-EXACT-N", True), ("EVICT-IDLE-ONLY", False), ("EVICT-UNPROTECTED", False),
])
def test_blame_is_right_only_when_the_named_check_fails_on_the_witness(
    tmp_path: Path, named: str, right: bool,
) -> None:
    # A FIFO that returns one victim short: the witness breaks EVICT-EXACT-N
    # only, so naming any other requirement for it is a wrong blame.
    source = (ROOT / FIFO.path).read_text(encoding="utf-8")
    faulty = source.replace("if len(victims) < n:", "if len(victims) < n - 1:")
    assert faulty != source
    policy = tmp_path / "short_fifo.py"
    policy.write_text(faulty, encoding="utf-8")
    actions = [{"op": "insert", "key": 0, "ref_cnt": 0}, {"op": "insert", "key": 1, "ref_cnt": 0},
               {"op": "start_read", "key": 1}, {"op": "evict", "n": 2, "protected": []}]
    report = {"api": "R10", "failures": [
        {"requirement": named, "level": "MUST", "actions": actions, "capacity": 2},
        {"requirement": "EVICT-ZERO", "level": "MUST", "actions": [], "capacity": None}]}
    judged, unreplayable = _judge(tmp_path, policy, report, "core")
    assert judged["right"] is right
    assert judged["first"] == "EVICT-EXACT-N"
    assert unreplayable["right"] is None and "no trace" in unreplayable["note"]
    # the original FIFO passes the same witness: nothing to blame
    [clean, _] = _judge(tmp_path, ROOT / FIFO.path, report, "core")
    assert clean["right"] is False and clean["first"] is None


# -- vLLM 0.34.0's files, read from its wheel ---------------------------------------


@pytest.fixture(scope="module")
def vllm_wheel() -> Path:
    pytest.importorskip("cosmic_ray", reason="the mutation extra is not installed")
    from benchmarks.mutation_wheel import WheelUnavailable, wheel

    try:
        return wheel()
    except WheelUnavailable as exc:
        pytest.skip(f"vLLM's wheel cannot be had here: {exc}")


def test_the_wheel_gives_both_policy_files_and_they_are_not_in_the_repository(
    vllm_wheel: Path,
) -> None:
    from benchmarks.mutation import mutants_of, original_source

    for target in (t for t in TARGETS if t.wheel):
        source = original_source(target, vllm_wheel)
        assert "class " + target.policy.split(":")[1] in source
        assert not (ROOT / target.path).exists()
        assert len(mutants_of(target, vllm_wheel)) > 50


def test_a_killed_mutant_of_vllms_lru_is_judged_whole(vllm_wheel: Path) -> None:
    from benchmarks.mutation import run_target

    lru = next(t for t in TARGETS if t.wheel == "lru.py")
    chosen = MutantId(lru.file_id, "_get_request_rank", "AddNot", "if (", "if not (")
    result = run_target(lru, budget="1", timeout=300.0, limit=None, say=lambda _: None,
                        wheel_path=vllm_wheel, select=chosen.__eq__)
    [outcome] = result.outcomes
    # every request gets a fresh rank state check inverted: the hook reads a
    # state it never stored
    assert outcome.status == "killed" and outcome.verdict == "fail", outcome
    assert outcome.blame_right is True, outcome.blame
    assert outcome.snippet is not None and outcome.snippet.shown, outcome.snippet


def test_offline_the_benchmark_stops_with_one_line(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.mutation import main

    # pip pointed at a closed loopback port, no other index: as offline
    for name, value in (("PIP_CONFIG_FILE", os.devnull), ("PIP_RETRIES", "0"),
                        ("PIP_INDEX_URL", "http://127.0.0.1:9/simple"), ("PIP_TIMEOUT", "2")):
        monkeypatch.setenv(name, value)
    assert main(["--only", "vllm-0.34.0/", "--wheel-dir", str(tmp_path / "w")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "cannot download vllm==0.34.0" in err and "--wheel-dir" in err


# -- a diagnosis located at the mutated code ----------------------------------------

SOURCE = '''
class P:
    def __init__(self):
        self.ranks = {}
    def _rank(self, key):
        return self.ranks.get(key, 0)
    def _commit(self, keys):
        for key in keys:
            self.ranks[key] = self._rank(key) + 1
    def on_request_finished(self, groups, only, reused, ctx):
        self._commit(reused)
    def on_request_access(self, keys, ctx):
        return None
    def evict(self, n, protected):
        return sorted(self.ranks, key=self._rank)[:n]
'''


def test_a_diagnosis_is_located_where_the_operation_named_runs_the_mutated_code() -> None:
    from benchmarks.mutation_located import callers, located, operations_named

    assert operations_named("lru-0.34", "LRU033-FINISH-COMMIT") == {"on_request_finished"}
    assert operations_named("core", "LRU033-FINISH-COMMIT") == frozenset()  # no refinement
    # _rank is reached from on_request_finished through _commit, and from evict
    assert callers(SOURCE, "_rank") == {"_rank", "_commit", "on_request_finished", "evict"}
    assert located(SOURCE, "_commit", "lru-0.34", "LRU033-FINISH-COMMIT")
    # a fault in __init__ or in evict named as an operation's is not located
    assert not located(SOURCE, "__init__", "lru-0.34", "LRU033-FINISH-COMMIT")
    assert not located(SOURCE, "evict", "lru-0.34", "LRU033-ACCESS-RANK")
    assert not located(SOURCE, "_commit", "lru-0.34", "LRU033-ACCESS-RANK")
    # an id whose text is about other calls than its culprit's: a request rank
    # reused after a clear is taken in insert or on_request_access (spec/lru033.md)
    assert operations_named("lru-0.34", "LRU033-CLEAR-RESET") == {
        "clear", "insert", "on_request_access"}
