"""``policyspec simulate`` (spec/traffic.md, "Simulate"): the table, the
JSON, the SVG curve and the page; the same numbers on every run (times
aside); shards that merge back into the whole grid; a policy that breaks
the play is exit 1; the measuring tools."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import pytest

from policyspec.cli import main
from policyspec.reference import LRU033CachePolicy
from policyspec.vllm.standins.keys import ReqContext
from policyspec.workload.measure import Histogram, owned_bytes
from policyspec.workload.ports import Chunk

ADAPTIVE = str(Path(__file__).parent / "correct" / "w_tinylfu.py") + ":Policy"
SIZES = ["--capacity", "64", "--capacity", "256", "--capacity", "1024"]
SVG = "{http://www.w3.org/2000/svg}"


def simulate(tmp: Path, name: str, *extra: str, target: str | None = ADAPTIVE) -> int:
    args = ["simulate", *([target] if target else []), "--requests", "120", *SIZES, "-q",
            "--json-report", str(tmp / f"{name}.json"), *extra]
    return main(args)


def cells(path: Path) -> list[dict[str, Any]]:
    """The cells without what differs from run to run (their times)."""
    data = json.loads(path.read_text())
    return [{k: v for k, v in cell.items() if k != "times"} for cell in data["cells"]]


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("simulate")
    assert simulate(tmp, "whole", "--html-report", str(tmp / "whole.html"),
                    "--svg", str(tmp / "whole.svg"), "--markdown", str(tmp / "whole.md")) == 0
    return tmp


def test_the_grid_is_every_policy_at_every_size(whole: Path) -> None:
    data = json.loads((whole / "whole.json").read_text())
    assert data["schema"] == "policyspec-simulate/1"
    labels = [p["label"] for p in data["policies"]]
    assert labels == ["w_tinylfu.py:Policy", "reference LRU", "reference ARC"]
    assert [(c["capacity"], c["policy"]) for c in data["cells"]] == [
        (size, label) for size in (64, 256, 1024) for label in labels]
    for cell in data["cells"]:
        assert cell["error"] is None and cell["requests"] == 120
        assert cell["hit_rate"] == pytest.approx(cell["hit_blocks"] / cell["blocks"], abs=1e-6)
        assert cell["policy_calls"] > cell["blocks"] and cell["memory_bytes"] > 0
        times = cell["times"]["call_ns"]
        assert 0 < times["median"] <= times["p99"]
    small = [c for c in data["cells"] if c["capacity"] == 64]
    large = [c for c in data["cells"] if c["capacity"] == 1024]
    assert all(s["blocks_evicted"] > 0 for s in small)
    assert all(b["hit_rate"] > s["hit_rate"] for s, b in zip(small, large, strict=True))
    assert all(b["memory_bytes"] > s["memory_bytes"] for s, b in zip(small, large, strict=True))


def test_the_table_is_printed_and_written_as_markdown(whole: Path) -> None:
    table = (whole / "whole.md").read_text().splitlines()
    assert table[0].startswith("| trace | cache size (blocks) | policy | block hit rate |")
    rows = [line for line in table[2:] if line.startswith("| sample.jsonl")]
    assert len(rows) == 9
    assert "| 1,024 | reference ARC |" in rows[-1]


def test_the_curve_is_an_svg_with_a_line_per_policy(whole: Path) -> None:
    root = ElementTree.parse(whole / "whole.svg").getroot()
    assert root.tag == f"{SVG}svg"
    groups = [g for g in root.iter(f"{SVG}g") if g.get("class") == "series"]
    assert [g.get("data-label") for g in groups] == [
        "w_tinylfu.py:Policy", "reference LRU", "reference ARC"]
    data = json.loads((whole / "whole.json").read_text())
    for group in groups:
        points = [p for p in group if p.get("class") == "point"]
        assert [int(p.get("data-size", 0)) for p in points] == [64, 256, 1024]
        expected = [round(1 - c["hit_rate"], 6) for c in data["cells"]
                    if c["policy"] == group.get("data-label")]
        assert [float(p.get("data-miss-ratio", 0)) for p in points] == pytest.approx(expected)
        assert group.find(f"{SVG}polyline") is not None


def test_a_rerun_gives_the_same_numbers(whole: Path, tmp_path: Path) -> None:
    assert simulate(tmp_path, "again") == 0
    assert cells(tmp_path / "again.json") == cells(whole / "whole.json")


def test_shards_merge_into_the_whole_grid(whole: Path, tmp_path: Path) -> None:
    for k in (1, 2):
        assert simulate(tmp_path, f"shard{k}", "--shard", f"{k}/2", "--jobs", "2") == 0
    one = json.loads((tmp_path / "shard1.json").read_text())
    assert [c["index"] for c in one["cells"]] == [0, 2, 4, 6, 8]
    merged = tmp_path / "merged.json"
    assert main(["simulate", "--merge", str(tmp_path / "shard2.json"),
                 str(tmp_path / "shard1.json"), "--json-report", str(merged)]) == 0
    assert cells(merged) == cells(whole / "whole.json")


@pytest.mark.parametrize(("shards", "problem"), [
    (["shard1"], "shard 2 of 2 is missing"),
    (["shard1", "shard1"], "shard 1 again"),
    (["shard1", "other"], "a shard of another campaign"),
])
def test_merge_refuses_what_is_not_one_campaign(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], shards: list[str],
        problem: str) -> None:
    def shard(name: str, capacity: int) -> None:
        data = {"schema": "policyspec-simulate/1", "traces": [
            {"path": "t", "requests": 1, "blocks": 1, "sha256": "ab"}], "capacities": [capacity],
            "policies": [{"label": "x", "target": "m:X", "api": "R9"}], "timing": {},
            "store_threshold": 1, "request_limit": None, "shard": [1, 2], "cells": []}
        (tmp_path / f"{name}.json").write_text(json.dumps(data))

    shard("shard1", 64)
    shard("other", 128)
    out = tmp_path / "merged.json"
    code = main(["simulate", "--merge", *(str(tmp_path / f"{s}.json") for s in shards),
                 "--json-report", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and problem in err[0]
    assert not out.exists()


BROKEN = '''
from policyspec.reference import LRU033CachePolicy


class Policy(LRU033CachePolicy):
    def evict(self, n, protected):
        raise RuntimeError("out of ideas")
'''


def test_a_policy_that_breaks_the_play_is_exit_1_with_its_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "broken.py"
    path.write_text(BROKEN)
    code = simulate(tmp_path, "broken", target=f"{path}:Policy")
    out = capsys.readouterr().out
    assert code == 1
    assert "broken.py:Policy at 64 blocks on sample.jsonl stopped: after" in out
    assert "RuntimeError: out of ideas" in out
    data = json.loads((tmp_path / "broken.json").read_text())
    assert data["cells"][0]["error"] and data["cells"][1]["error"] is None


NO_CLEAR = '''
class Policy:
    """A seed-API FIFO without clear or marks (an early revision)."""

    def __init__(self, cache_capacity):
        self.blocks = {}

    def get(self, key):
        return self.blocks.get(key)

    def insert(self, key, block):
        self.blocks[key] = block

    def remove(self, key):
        del self.blocks[key]

    def touch(self, keys):
        pass

    def evict(self, n, protected):
        if n == 0:
            return []
        out = [k for k, b in self.blocks.items() if b.ref_cnt == 0 and k not in protected][:n]
        return None if len(out) < n else [(k, self.blocks.pop(k)) for k in out]
'''


def test_a_policy_without_clear_or_marks_plays_as_the_base_class_would(
        tmp_path: Path) -> None:
    # vLLM's base class gives a revision without marks marks that do nothing;
    # the trace never resets, so a missing clear is never called
    path = tmp_path / "no_clear.py"
    path.write_text(NO_CLEAR)
    assert simulate(tmp_path, "noclear", target=f"{path}:Policy") == 0
    data = json.loads((tmp_path / "noclear.json").read_text())
    assert all(cell["error"] is None for cell in data["cells"])


def test_a_target_that_is_a_reference_is_listed_once(tmp_path: Path) -> None:
    assert simulate(tmp_path, "ref", target="policyspec.reference:LRU034CachePolicy") == 0
    data = json.loads((tmp_path / "ref.json").read_text())
    assert [p["label"] for p in data["policies"]] == ["reference LRU", "reference ARC"]
    assert data["policies"][0]["target"] == "policyspec.reference:LRU034CachePolicy"


def test_histogram_quantiles_are_within_a_sixteenth_of_a_doubling() -> None:
    histogram = Histogram()
    values = [5] * 50 + [1000] * 49 + [50_000]
    for value in values:
        histogram.add(value)
    assert histogram.quantile(0.5) == 5
    assert 1000 <= histogram.quantile(0.99) <= 1000 * 2 ** (1 / 16)
    assert 50_000 <= histogram.quantile(1.0) <= 50_000 * 2 ** (1 / 16)
    assert Histogram().quantile(0.5) == 0


def test_owned_bytes_counts_the_policy_not_the_managers_objects() -> None:
    small, large = LRU033CachePolicy(cache_capacity=8), LRU033CachePolicy(cache_capacity=800)
    ctx = ReqContext("r")
    keys = [i.to_bytes(8, "big") for i in range(800)]
    chunks = [Chunk(i) for i in range(800)]
    for key, chunk in zip(keys, chunks, strict=True):
        large.insert(key, chunk, ctx)
    full = owned_bytes(large)
    assert full > owned_bytes(small) + 800 * 50  # its tables grew
    assert owned_bytes(large, (dict,)) < full  # leaving more out counts less
    # The keys, chunks and contexts it holds are the manager's: only the containers count.
    holder = [keys, chunks, ctx]
    assert owned_bytes(holder) == sum(map(sys.getsizeof, (holder, keys, chunks)))
