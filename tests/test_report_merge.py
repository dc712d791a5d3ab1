"""One verdict from many shards: ``policyspec report --merge`` combines the
reports of ``check --shard K/N`` into the report of the whole campaign, and
refuses reports that are not exactly its shards 1..N."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from report_pages import LRU, NEWEST_FIRST

from policyspec.cli import main
from policyspec.registry import spec_dir
from policyspec.reports.merge import MergeError, merge_reports
from policyspec.reports.report import Report, load_report


def _run(out: Path, target: str, *extra: str, depth: int = 3, profile: str = "lru") -> Path:
    path = out.with_suffix(".json")
    main(["check", target, "--profile", profile, "--engine", "exhaustive", "--depth", str(depth),
          "--keys", "3", "-q", "--json-report", str(path), *extra])
    return path


def _campaign(tmp: Path, target: str, shards: int, *extra: str, depth: int = 3
              ) -> tuple[Path, list[Path]]:
    whole = _run(tmp / "whole", target, *extra, depth=depth)
    parts = [_run(tmp / f"shard{k}", target, "--shard", f"{k}/{shards}", *extra, depth=depth)
             for k in range(1, shards + 1)]
    return whole, parts


def _same_counts(merged: Report, whole: Report) -> None:
    assert merged.verdict == whole.verdict
    for key in ("calls", "steps", "examples"):
        assert merged.stats[key] == whole.stats[key], key
    engine, alone = merged.stats["engines"]["exhaustive"], whole.stats["engines"]["exhaustive"]
    for key in ("calls", "steps", "examples", "sequences", "maximal_sequences", "depth", "keys"):
        assert engine[key] == alone[key], key
    # distinct states are shared between shards: the merge keeps a lower bound
    assert 0 < engine["model_states"] <= alone["model_states"]
    assert [(r.id, r.status, r.checks) for r in merged.requirements] == [
        (r.id, r.status, r.checks) for r in whole.requirements]
    assert [f.requirement for f in merged.failures] == [f.requirement for f in whole.failures]


@pytest.mark.slow
def test_four_shards_of_a_deep_exhaustive_run_merge_to_the_unsharded_run(tmp_path: Path) -> None:
    # depth 4 over 3 keys: 79,210 legal sequences (about 12 s of CPU, once whole, once sharded)
    whole, parts = _campaign(tmp_path, LRU, 4, depth=4)
    out = tmp_path / "merged.json"
    code = main(["report", "--merge", *map(str, parts), "--json-report", str(out), "-q"])
    # The exhaustive engine alone exercises no MANAGER-* and no metamorphic
    # relation: no failure, but MUSTs unjudged, in the whole run and merged.
    assert code == 3
    merged, alone = load_report(out), load_report(whole)
    assert merged.verdict == "unjudged" and merged.verdict_reason == alone.verdict_reason
    assert merged.stats["calls"] == 272_767 and merged.stats["examples"] == 79_210
    _same_counts(merged, alone)
    schema = json.loads((spec_dir() / "report.schema.json").read_text())
    jsonschema.validate(json.loads(out.read_text()), schema)


def test_shards_of_a_failing_campaign_merge_to_one_failure(tmp_path: Path) -> None:
    whole, parts = _campaign(tmp_path, NEWEST_FIRST, 4)
    out = tmp_path / "merged.json"
    code = main(["report", "--merge", *map(str, reversed(parts)), "--json-report", str(out),
                 "--html", str(tmp_path / "merged.html"), "-q"])
    assert code == 1
    merged, alone = load_report(out), load_report(whole)
    assert merged.verdict == alone.verdict == "fail"
    [failure] = merged.failures
    assert failure.requirement == "LRU-EVICT-ORDER"
    assert len(failure.trace) == len(alone.failures[0].trace)  # the shortest, once
    assert merged.stats["merged_shards"] == ["1/4", "2/4", "3/4", "4/4"]
    assert "LRU-EVICT-ORDER" in (tmp_path / "merged.html").read_text()


def test_passing_campaign_merges_with_equal_counts(tmp_path: Path) -> None:
    whole, parts = _campaign(tmp_path, LRU, 3)
    merged = merge_reports([load_report(p) for p in parts])
    _same_counts(merged, load_report(whole))


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = tmp_path_factory.mktemp("shards")
    return [_run(out / f"s{k}", LRU, "--shard", f"{k}/4", depth=2) for k in range(1, 5)]


def test_a_missing_shard_is_refused(shards: list[Path], capsys: pytest.CaptureFixture[str]
                                    ) -> None:
    code = main(["report", "--merge", str(shards[0]), str(shards[1]), str(shards[3])])
    assert code == 2
    assert "shard 3/4 is missing" in capsys.readouterr().err


def test_a_shard_given_twice_is_refused(shards: list[Path]) -> None:
    reports = [load_report(p) for p in [*shards, shards[2]]]
    with pytest.raises(MergeError, match="shard 3/4 is given twice"):
        merge_reports(reports)


@pytest.mark.parametrize(("field", "value"), [
    ("target", "other.module:Policy"), ("profile", "core"), ("seed", 7), ("shards", "2/5"),
    ("depth", 3), ("policyspec_version", "9.9.9"),
])
def test_shards_of_another_campaign_are_refused(shards: list[Path], field: str, value: object
                                                ) -> None:
    reports = [load_report(p) for p in shards]
    odd = reports[1]
    if field in ("target", "profile", "policyspec_version"):
        setattr(odd, field, value)
    elif field == "seed":
        odd.stats["seed"] = value
    elif field == "shards":
        odd.stats["shard"] = value
    else:
        odd.stats["engines"]["exhaustive"]["depth"] = value
    with pytest.raises(MergeError, match="not a shard of the same campaign"):
        merge_reports(reports)


def test_shards_that_applied_known_failing_are_refused(shards: list[Path], tmp_path: Path
                                                       ) -> None:
    reports = [load_report(p) for p in shards]
    reports[0].requirements[0].status = "xfail"
    with pytest.raises(MergeError, match="known-failing"):
        merge_reports(reports)


def test_known_failing_applies_to_the_merged_report(tmp_path: Path) -> None:
    parts = [_run(tmp_path / f"s{k}", NEWEST_FIRST, "--shard", f"{k}/2") for k in (1, 2)]
    listed = tmp_path / "known.txt"
    listed.write_text("LRU-EVICT-ORDER  # newest first, by design\n")
    out = tmp_path / "merged.json"
    code = main(["report", "--merge", *map(str, parts), "--known-failing", str(listed),
                 "--json-report", str(out), "-q"])
    assert code == 3  # no failure left; the exhaustive engine alone leaves MUSTs unjudged
    merged = load_report(out)
    assert merged.verdict == "unjudged"
    assert "LRU-EVICT-ORDER" not in merged.verdict_reason
    assert {r.id: r.status for r in merged.requirements}["LRU-EVICT-ORDER"] == "xfail"


def test_merge_options_need_merge(shards: list[Path], capsys: pytest.CaptureFixture[str]
                                  ) -> None:
    assert main(["report", str(shards[0]), "--json-report", "x.json"]) == 2
    assert "go with --merge" in capsys.readouterr().err


def test_a_file_that_is_not_a_report_is_refused(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "something-else/2"}')
    assert main(["report", "--merge", str(bad)]) == 2
    assert "not a policyspec-report/1 report" in capsys.readouterr().err
