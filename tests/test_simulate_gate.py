"""``simulate --baseline OTHER --fail-under X`` (spec/traffic.md, "A
hit-rate gate"): a policy that caches worse than LRU fails the gate (exit
1) and every report says where and by how much; the same rule at the
boundary (equal hit rates pass at 1.0 and fail just above); without a
threshold only the ratios; bad values are exit 2 with one line."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import pytest

from policyspec.cli import main

CORRECT = Path(__file__).parent / "correct"
LRU034 = "policyspec.reference:LRU034CachePolicy"
SIZES = ["--capacity", "32", "--capacity", "128"]

MRU034 = '''
from policyspec.reference import LRU034CachePolicy


class Policy(LRU034CachePolicy):
    """Evicts the idle keys of greatest rank: the most recent first."""

    def evict(self, n, protected):
        if n == 0:
            return []
        picked = [key for _, key in reversed(self.idle) if key not in protected][:n]
        if len(picked) < n:
            return None
        for key in picked:
            self.mark_non_evictable(key)
            del self.ranks[key]
        return [(key, self.chunks.pop(key)) for key in picked]
'''

COPY034 = '''
from policyspec.reference import LRU034CachePolicy


class Policy(LRU034CachePolicy):
    """The reference LRU under another class: played as a policy of its own."""
'''


def run(tmp: Path, target: str, *extra: str) -> tuple[int, dict[str, Any]]:
    code = main(["simulate", target, "--requests", "150", *SIZES, "-q",
                 "--json-report", str(tmp / "gate.json"), "--junit-xml", str(tmp / "gate.xml"),
                 "--html-report", str(tmp / "gate.html"), *extra])
    data = json.loads((tmp / "gate.json").read_text()) if (tmp / "gate.json").exists() else {}
    return code, data


def write(tmp: Path, name: str, text: str) -> str:
    (tmp / name).write_text(text)
    return f"{tmp / name}:Policy"


@pytest.mark.parametrize("pair", ["seed", "R10"])
def test_a_policy_that_loses_to_lru_fails_the_gate_in_every_report(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], pair: str) -> None:
    if pair == "seed":
        target = f"{CORRECT / 'mru_first.py'}:Policy"
        baseline = f"{CORRECT / 'reference_lru.py'}:Policy"
    else:
        target, baseline = write(tmp_path, "mru034.py", MRU034), LRU034
    code, data = run(tmp_path, target, "--baseline", baseline, "--fail-under", "0.9")
    out = capsys.readouterr().out
    assert code == 1
    assert data["gate_verdict"] == "fail" and data["fail_under"] == 0.9
    labels = [p["label"] for p in data["policies"]]
    assert labels[:2] == [target.rsplit("/", 1)[-1], data["baseline"]]
    rows = data["gate"]
    assert [r["capacity"] for r in rows] == [32, 128]
    cells = {(c["capacity"], c["policy"]): c for c in data["cells"]}
    for row in rows:
        mine, other = cells[row["capacity"], labels[0]], cells[row["capacity"], labels[1]]
        assert row["ratio"] == pytest.approx(mine["hit_blocks"] / other["hit_blocks"], abs=1e-6)
        assert row["passed"] == (mine["hit_blocks"] >= 0.9 * other["hit_blocks"])
    failing = [r for r in rows if not r["passed"]]
    assert failing and all(r["ratio"] < 0.9 for r in failing)
    assert "gate: FAIL" in out
    suite = ElementTree.parse(tmp_path / "gate.xml").getroot()
    gates = [c for c in suite.iter("testcase") if c.get("classname") == "policyspec.simulate.gate"]
    assert len(gates) == 2 and int(suite.get("failures", "0")) == len(failing)
    assert sum(1 for c in gates if c.find("failure") is not None) == len(failing)
    verdict = {p.get("name"): p.get("value") for p in suite.find("properties") or []}
    assert verdict["verdict"] == "FAIL" and verdict["fail_under"] == "0.9"
    html = (tmp_path / "gate.html").read_text()
    assert "Hit-rate gate" in html and "Gate: <strong>FAIL</strong>" in html


def test_the_reference_lru_against_itself_passes_at_one(tmp_path: Path) -> None:
    code, data = run(tmp_path, LRU034, "--baseline", LRU034, "--fail-under", "1.0")
    assert code == 0 and data["gate_verdict"] == "pass"
    assert [(r["ratio"], r["passed"]) for r in data["gate"]] == [(1.0, True), (1.0, True)]
    suite = ElementTree.parse(tmp_path / "gate.xml").getroot()
    assert suite.get("failures") == "0"
    assert "Gate: <strong>PASS</strong>" in (tmp_path / "gate.html").read_text()


@pytest.mark.parametrize(("threshold", "code"), [("1.0", 0), ("1.000001", 1), ("0.999999", 0)])
def test_equal_hit_rates_of_two_policies_are_compared_exactly(
        tmp_path: Path, threshold: str, code: int) -> None:
    copy = write(tmp_path, "copy.py", COPY034)
    got, data = run(tmp_path, copy, "--baseline", LRU034, "--fail-under", threshold)
    assert [p["label"] for p in data["policies"]] == ["copy.py:Policy", "reference LRU",
                                                      "reference ARC"]
    cells = {(c["capacity"], c["policy"]): c["hit_blocks"] for c in data["cells"]}
    assert all(cells[s, "copy.py:Policy"] == cells[s, "reference LRU"] > 0 for s in (32, 128))
    assert got == code
    assert data["gate_verdict"] == ("pass" if code == 0 else "fail")


def test_a_baseline_without_a_threshold_reports_ratios_and_gates_nothing(tmp_path: Path) -> None:
    mru = write(tmp_path, "mru034.py", MRU034)
    code, data = run(tmp_path, mru, "--baseline", LRU034)
    assert code == 0 and data["gate_verdict"] is None and data["fail_under"] is None
    assert len(data["gate"]) == 2 and all(r["passed"] is None for r in data["gate"])
    assert any(r["ratio"] < 1 for r in data["gate"])
    suite = ElementTree.parse(tmp_path / "gate.xml").getroot()
    assert suite.get("failures") == "0" and suite.get("tests") == str(len(data["cells"]))
    html = (tmp_path / "gate.html").read_text()
    assert "Hit-rate gate" in html and "Gate: <strong>" not in html


def test_the_merged_shards_carry_the_whole_gate(tmp_path: Path) -> None:
    mru = write(tmp_path, "mru034.py", MRU034)
    whole = tmp_path / "whole"
    whole.mkdir()
    assert run(whole, mru, "--baseline", LRU034, "--fail-under", "0.9")[0] == 1
    for k in (1, 2):
        assert main(["simulate", mru, "--requests", "150", *SIZES, "-q", "--baseline", LRU034,
                     "--fail-under", "0.9", "--shard", f"{k}/2",
                     "--json-report", str(tmp_path / f"s{k}.json")]) in (0, 1)
    merged = tmp_path / "merged.json"
    code = main(["simulate", "--merge", str(tmp_path / "s1.json"), str(tmp_path / "s2.json"),
                 "--json-report", str(merged)])
    data, expected = json.loads(merged.read_text()), json.loads((whole / "gate.json").read_text())
    assert code == 1 and data["gate"] == expected["gate"] and data["gate_verdict"] == "fail"


@pytest.mark.parametrize(("extra", "problem"), [
    (["--baseline", LRU034, "--fail-under", "0"], "above 0"),
    (["--baseline", LRU034, "--fail-under", "-1"], "above 0"),
    (["--baseline", LRU034, "--fail-under", "nan"], "above 0"),
    (["--baseline", LRU034, "--fail-under", "inf"], "above 0"),
    (["--baseline", LRU034, "--fail-under", "half"], "expected a number"),
    (["--fail-under", "0.9"], "--fail-under needs --baseline"),
    (["--baseline", "no_such_module:Policy"], "no_such_module"),
    (["--semantics", "plain", "--store-threshold", "2"], "--semantics vllm"),
    (["--semantics", "textbook"], "invalid choice"),
])
def test_bad_gate_arguments_are_exit_2_with_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str],
        problem: str) -> None:
    out = tmp_path / "none.json"
    try:
        code = main(["simulate", LRU034, "--requests", "5", "--capacity", "8", "-q",
                     "--json-report", str(out), *extra])
    except SystemExit as stop:  # argparse's own check of a value
        code = int(stop.code or 0)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and problem in err[0], err
    assert not out.exists()


def test_a_baseline_needs_a_target(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--baseline", LRU034, "--requests", "5", "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--baseline needs a TARGET" in err[0]


BROKEN = '''
from policyspec.reference import LRU034CachePolicy


class Policy(LRU034CachePolicy):
    def evict(self, n, protected):
        raise RuntimeError("out of ideas")
'''


@pytest.mark.parametrize("semantics", ["vllm", "plain"])
def test_a_target_that_stops_the_play_fails_the_gate_at_that_size(
        tmp_path: Path, semantics: str) -> None:
    broken = write(tmp_path, "broken.py", BROKEN)
    code, data = run(tmp_path, broken, "--baseline", LRU034, "--fail-under", "0.01",
                     "--semantics", semantics)
    assert code == 1 and data["gate_verdict"] == "fail"
    stopped = {c["capacity"] for c in data["cells"] if c["error"]}
    assert stopped  # evictions start within 150 requests at 32 blocks at least
    for row in data["gate"]:
        assert (row["passed"], row["ratio"] is None) == (
            (False, True) if row["capacity"] in stopped else (True, False))
    suite = ElementTree.parse(tmp_path / "gate.xml").getroot()
    assert int(suite.get("errors", "0")) == len(stopped)
