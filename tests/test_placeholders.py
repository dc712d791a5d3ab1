"""Fork files that use vLLM names the stand-ins lack: exit
2 by default, naming the name and the option; with ``--placeholder NAME``
the name stays an inert placeholder for the whole check, the report names
it and every rendering of the verdict says it holds with it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from policyspec.adapters import PlaceholderUsedError, TargetError, load_subject
from policyspec.registry import spec_dir
from policyspec.vllm.standins import installed
from policyspec.vllm.standins.placeholders import keeps

FORK = Path(__file__).parent / "loading_fixtures" / "fork_r0"
COUNTING = "counting_lru.py:CountingLRUPolicy"
QUALIFIED = "vllm.v1.kv_offload.cpu.policies.abstract.PolicyStats"
QUICK = ("--budget", "3", "--engine", "stateful", "--engine", "manager", "--jobs", "1", "-q")


def run_check(*args: str, cwd: Path = FORK) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "policyspec", "check", *args],
        cwd=cwd, capture_output=True, text=True, timeout=180,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


def test_a_fork_name_is_exit_2_by_default_naming_it_and_the_option() -> None:
    done = run_check(COUNTING, *QUICK)
    assert done.returncode == 2, done.stdout[-2000:]
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("policyspec: error: counting_lru.py:13: building "
                           "CountingLRUPolicy(cache_capacity=4) uses PolicyStats"), line
    assert line.endswith("or check it with an inert placeholder for it (--placeholder "
                         "PolicyStats; the verdict then says so)"), line


def test_with_the_option_the_fork_is_checked_and_every_report_says_so(tmp_path: Path) -> None:
    paths = {kind: tmp_path / f"report.{kind}" for kind in ("json", "xml", "html")}
    done = run_check(COUNTING, *QUICK, "--placeholder", "PolicyStats",
                     "--json-report", str(paths["json"]), "--junit-xml", str(paths["xml"]),
                     "--html-report", str(paths["html"]))
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr)
    lines = done.stdout.splitlines()
    assert lines[-1] == "verdict: PASS (holds with placeholders for PolicyStats)"
    assert any(line.startswith("note: kept as inert placeholders for the whole check "
                               f"(--placeholder): {QUALIFIED}") for line in lines), lines
    assert not any("using one during the check fails" in line for line in lines)

    data = json.loads(paths["json"].read_text())
    jsonschema.validate(data, json.loads((spec_dir() / "report.schema.json").read_text()))
    assert (data["verdict"], data["placeholders"]) == ("pass", [QUALIFIED])
    assert data["stats"]["calls"] > 0

    suite = ET.parse(paths["xml"]).getroot()
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties == {"verdict": "PASS (holds with placeholders for PolicyStats)",
                          "placeholders": QUALIFIED}
    assert "(holds with placeholders for PolicyStats)" in paths["html"].read_text()


def test_a_faulty_fork_still_fails_and_its_repro_keeps_the_placeholder(tmp_path: Path) -> None:
    source = (FORK / "counting_lru.py").read_text()
    faulty = source.replace("if block.ref_cnt == 0 and key not in protected:",
                            "if key not in protected:")
    assert faulty != source
    (tmp_path / "faulty_counting.py").write_text(faulty)
    report = tmp_path / "report.json"
    done = run_check("faulty_counting.py:CountingLRUPolicy", *QUICK, "--placeholder",
                     "PolicyStats", "--json-report", str(report), cwd=tmp_path)
    assert done.returncode == 1, (done.stdout[-3000:], done.stderr)
    assert done.stdout.splitlines()[-1] == ("verdict: FAIL (holds with placeholders for "
                                            "PolicyStats)")
    failure = json.loads(report.read_text())["failures"][0]
    assert f"placeholders=({QUALIFIED!r},)" in failure["repro"]
    replayed = subprocess.run(
        [sys.executable, "-c", failure["repro"]], cwd=tmp_path, capture_output=True, text=True,
        timeout=60, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert "TargetError" not in replayed.stderr and "PlaceholderUsed" not in replayed.stderr, \
        replayed.stderr


def test_a_placeholder_the_policy_does_not_use_is_exit_2() -> None:
    done = run_check("lru_bh.py:LRUPolicy", *QUICK, "--placeholder", "PolicyStats")
    assert done.returncode == 2
    assert done.stderr == ("policyspec: error: --placeholder PolicyStats: the policy uses no "
                           "unmodelled vLLM name PolicyStats while it loads (unmodelled names "
                           "it uses: none)\n")


def test_placeholder_does_not_go_with_no_stand_in() -> None:
    done = run_check(COUNTING, *QUICK, "--placeholder", "PolicyStats", "--no-stand-in")
    assert done.returncode == 2
    assert "--placeholder keeps names of the vLLM stand-ins" in done.stderr


def test_only_the_kept_names_stay_inert_in_the_library() -> None:
    subject = load_subject(f"{FORK}/{COUNTING}", placeholders=["PolicyStats"])
    assert subject.placeholders == (QUALIFIED,)
    policy = subject.build(4)
    assert policy.get(subject.make_key(1)) is None  # counts a miss: nothing happens
    with installed() as record:
        assert record is not None
        from vllm.v1.kv_offload.cpu import manager  # type: ignore[import-not-found]

        record.arm()
        with pytest.raises(PlaceholderUsedError, match="CPUOffloadingManager"):
            manager.CPUOffloadingManager()
    with pytest.raises(TargetError, match="uses PolicyStats"):
        load_subject(f"{FORK}/{COUNTING}")


def test_a_kept_placeholder_does_nothing_whatever_is_done_with_it() -> None:
    with installed(["Stats"]) as record:
        assert record is not None
        from vllm.fork import Stats  # type: ignore[import-not-found]

        record.arm()
        stats = Stats(8)
        stats.hits += 1
        stats.counts["k"] = stats.counts["k"] + 1
        stats.record(1, kind="hit").then()
        with stats.lock:
            pass
        assert (stats.hits > 3, stats.hits <= 3, len(stats.seen), list(stats.seen)) == (
            False, False, 0, [])
        assert Stats(1) is Stats(2)  # one result per placeholder: no class per call
        assert record.kept_names() == ["vllm.fork.Stats"]


def test_an_armed_placeholder_names_itself_when_counted() -> None:
    with installed() as record:
        assert record is not None
        from vllm.fork import Stats

        stats = Stats()
        record.arm()
        with pytest.raises(PlaceholderUsedError, match=r"vllm\.fork\.Stats\(\.\.\.\)\.hits"):
            stats.hits += 1
        with pytest.raises(PlaceholderUsedError, match=r"vllm\.fork\.Stats\(\.\.\.\)"):
            _ = stats + 1


@pytest.mark.parametrize(("kept", "name", "expected"), [
    ("PolicyStats", QUALIFIED, True),
    ("PolicyStats", f"{QUALIFIED}(...).hits", True),
    ("PolicyStats", "vllm.v1.kv_offload.cpu.policies.abstract.PolicyStatsV2", False),
    (QUALIFIED, f"{QUALIFIED}(...)", True),
    (QUALIFIED, f"{QUALIFIED}V2", False),
    ("vllm.v1.kv_offload.cpu.spec", "vllm.v1.kv_offload.cpu.spec.CPUOffloadingSpec", True),
])
def test_which_placeholders_a_name_keeps(kept: str, name: str, expected: bool) -> None:
    assert keeps(kept, name) is expected


def test_the_isolated_child_keeps_the_same_names(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    done = run_check(COUNTING, *QUICK, "--isolate", "--placeholder", "PolicyStats",
                     "--json-report", str(report))
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr)
    assert json.loads(report.read_text())["placeholders"] == [QUALIFIED]



def test_merged_shards_keep_the_placeholders_and_the_caveat() -> None:
    from policyspec.reports.merge import merge_reports
    from policyspec.reports.report import Report

    shards = [
        Report("t.py:P", "core", "pass", [], [], {"seed": 0, "shard": f"{k}/2", "engines": {}},
               placeholders=[QUALIFIED])
        for k in (1, 2)
    ]
    merged = merge_reports(shards)
    assert merged.placeholders == [QUALIFIED]
    assert merged.to_text().splitlines()[-1] == ("verdict: PASS (holds with placeholders for "
                                                 "PolicyStats)")
