"""``simulate --semantics plain`` against libCacheSim, the table of
spec/traffic.md ("Plain caching and the gap") recomputed, and the release
``simulate`` names for the manager it emulates.

The plain play must be a textbook cache, block for block: libCacheSim's
LRU and FIFO, every block reference a request, hit exactly the same blocks
as policyspec's LRU (both API revisions) and the repository's FIFO
(tests/correct/fifo.py, the example of spec/fifo.md), at sizes from one
block to more than the trace's distinct blocks, on the bundled sample and
on a trace of another shape."""

from __future__ import annotations

import html
import json
import random
from pathlib import Path

import pytest

from policyspec.cli import main
from policyspec.workload import ladder
from policyspec.workload.sample import sample_path

libcachesim = pytest.importorskip("libcachesim")

ROOT = Path(__file__).parent.parent
FIFO = str(Path(__file__).parent / "correct" / "fifo.py") + ":Policy"
LRU034 = "policyspec.reference:LRU034CachePolicy"
LRU033 = "policyspec.reference:LRU033CachePolicy"
SIZES = (1, 3, 16, 64, 256, 1024, 4096)
"""From one block to more than the sample's 2,703 distinct blocks."""


@pytest.fixture(scope="module")
def other_trace(tmp_path_factory: pytest.TempPathFactory) -> str:
    """policyspec's own format, string and number ids, short and long
    requests, heavy reuse of a small set and a long tail (fixed seed)."""
    rng = random.Random(7)
    path = tmp_path_factory.mktemp("plain") / "other.jsonl"
    lines = []
    for n in range(300):
        size = rng.choice((1, 2, 5, 12, 30))
        pool = rng.choice((40, 200, 5000))
        blocks = rng.sample(range(pool), size)
        named = [f"doc-{b}" if b % 3 == 0 else b for b in blocks]
        lines.append(json.dumps({"time_ms": n * 7, "blocks": named}))
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.mark.parametrize(("target", "cache"), [(LRU034, "LRU"), (LRU033, "LRU"),
                                               (FIFO, "FIFO")])
@pytest.mark.parametrize("trace", ["sample", "other"])
def test_plain_hits_equal_libcachesims(target: str, cache: str, trace: str,
                                       other_trace: str) -> None:
    path = str(sample_path()) if trace == "sample" else other_trace
    ids = ladder.block_ids(path)
    seen = []
    for size in SIZES:
        hits, blocks = ladder.hit_rate(target, size, "plain", trace=path)
        assert blocks == len(ids)
        assert hits == ladder.libcachesim_hits(cache, size, ids), (target, size)
        seen.append(hits)
    # Not a degenerate agreement: some hits when small, every reuse a hit
    # once the cache holds every block.
    assert 0 < seen[2] < seen[-1] == len(ids) - len(set(ids))


def test_lru_and_fifo_differ_so_the_comparison_tells_them_apart() -> None:
    ids = ladder.block_ids()
    assert ladder.libcachesim_hits("LRU", 256, ids) != ladder.libcachesim_hits("FIFO", 256, ids)
    assert ladder.hit_rate(LRU034, 256, "plain") != ladder.hit_rate(FIFO, 256, "plain")


def test_the_command_in_plain_semantics_reports_libcachesims_numbers(tmp_path: Path) -> None:
    out = tmp_path / "plain.json"
    assert main(["simulate", FIFO, "--semantics", "plain", "--capacity", "64", "--capacity",
                 "512", "-q", "--json-report", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["semantics"] == "plain"
    ids = ladder.block_ids()
    caches = {"fifo.py:Policy": "FIFO", "reference LRU": "LRU"}
    checked = 0
    for cell in data["cells"]:
        if cell["policy"] in caches:
            assert cell["hit_blocks"] == ladder.libcachesim_hits(
                caches[cell["policy"]], cell["capacity"], ids), cell
            assert cell["blocks"] == len(ids) and cell["error"] is None
            checked += 1
    assert checked == 4


def test_the_default_is_the_whole_manager_and_the_ladders_last_rows_are_simulates(
        tmp_path: Path) -> None:
    out = tmp_path / "vllm.json"
    assert main(["simulate", LRU034, "--capacity", "256", "-q", "--json-report", str(out)]) == 0
    cells = {c["policy"]: c for c in json.loads(out.read_text())["cells"]}
    assert json.loads(out.read_text())["semantics"] == "vllm"
    for label, target in (("reference LRU", LRU034),
                          ("reference ARC", "policyspec.reference:ARC034CachePolicy")):
        assert (cells[label]["hit_blocks"], cells[label]["blocks"]) == ladder.hit_rate(
            target, 256, "vllm")
    threshold = tmp_path / "threshold.json"
    assert main(["simulate", LRU034, "--capacity", "256", "--store-threshold", "2", "-q",
                 "--json-report", str(threshold)]) == 0
    lru = json.loads(threshold.read_text())["cells"][0]
    assert (lru["hit_blocks"], lru["blocks"]) == ladder.hit_rate(LRU034, 256, "vllm", 2)


@pytest.mark.parametrize("semantics", ["plain", "requests", "batches", "vllm"])
def test_each_semantics_is_played_by_the_command(tmp_path: Path, semantics: str) -> None:
    out = tmp_path / "s.json"
    assert main(["simulate", LRU034, "--semantics", semantics, "--capacity", "64", "-q",
                 "--json-report", str(out)]) == 0
    cell = json.loads(out.read_text())["cells"][0]
    assert (cell["hit_blocks"], cell["blocks"]) == ladder.hit_rate(LRU034, 64, semantics)


def test_the_semantics_differ_where_their_mechanisms_matter() -> None:
    """Each step changes some number of the table: a mode that silently
    played another's rules would not."""
    rates = {s: [ladder.hit_rate(t, 256, s) for _, t, _ in ladder.POLICIES]
             for s in ("plain", "requests", "batches", "vllm")}
    assert rates["plain"] != rates["requests"] != rates["batches"] != rates["vllm"]


def test_the_pages_ladder_table_is_the_one_measured_now() -> None:
    page = (ROOT / "spec" / "traffic.md").read_text(encoding="utf-8")
    assert ladder.page_table(page) == ladder.ladder_markdown(), (
        "spec/traffic.md's table is stale: python -m policyspec.workload.ladder "
        "--write spec/traffic.md")


def test_the_ladder_rewrites_only_its_table(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"before\n\n{ladder.BEGIN}\n| old |\n{ladder.END}\n\nafter\n")
    assert ladder.main(["--write", str(page)]) == 0
    text = page.read_text()
    assert text.startswith("before\n\n") and text.endswith("\n\nafter\n")
    assert ladder.page_table(text) == ladder.ladder_markdown()
    (tmp_path / "none.md").write_text("no markers\n")
    assert ladder.main(["--write", str(tmp_path / "none.md")]) == 2


def test_help_and_page_name_the_emulated_release(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "vLLM 0.34.0's for an R10 policy, vLLM 0.33.0's for earlier revisions" in text
    assert "Exit codes: 0" in text and "1 a policy stopped" in text and "2 bad arguments" in text
    seed_lru = str(Path(__file__).parent / "correct" / "reference_lru.py") + ":Policy"
    for target, manager, policy in (
            (LRU034, "vLLM 0.34.0's CPUOffloadingManager (emulated)",
             "reference LRU = policyspec.reference:LRU034CachePolicy (R10, vLLM 0.34.0's"),
            (seed_lru, "vLLM 0.33.0's and vLLM 0.34.0's CPUOffloadingManager (emulated)",
             "reference_lru.py:Policy = " + seed_lru + " (R3, vLLM 0.33.0's")):
        page = tmp_path / "page.html"
        assert main(["simulate", target, "--requests", "20", "--capacity", "16", "-q",
                     "--html-report", str(page)]) == 0
        facts = html.unescape(page.read_text())
        assert f"<dt>manager</dt><dd>{manager}, store threshold 1</dd>" in facts
        assert policy in facts
