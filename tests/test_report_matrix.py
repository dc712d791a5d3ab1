"""``policyspec report`` over several runs: the matrix (reference LRU and
ARC, two faulty policies), and what changed between two runs of the same
target (a policy file edited between runs, as between two releases)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from report_pages import ARC, IN_FLIGHT_VICTIM, LRU, NEWEST_FIRST, UNJUDGED, Page, check

from policyspec.cli import main
from policyspec.reports.matrix import changes, diff_pairs, label_runs, matrix_rows
from policyspec.reports.report import load_report

CORRECT = """
from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy):
    pass
"""

NEWEST_FIRST_FAULT = """
from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy):
    def evict(self, n, protected):
        victims = super().evict(n, protected)
        return None if victims is None else victims[::-1]  # the fault: newest first
"""


@pytest.fixture(scope="module")
def four(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = tmp_path_factory.mktemp("four")
    assert check(LRU, out / "lru", profile="lru") == UNJUDGED
    assert check(ARC, out / "arc", "--capacity", "3", profile="arc") == UNJUDGED
    assert check(IN_FLIGHT_VICTIM, out / "v09", profile="lru") == 1
    assert check(NEWEST_FIRST, out / "g09", profile="lru") == 1
    return [out / f"{n}.json" for n in ("lru", "arc", "v09", "g09")]


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same target checked twice: correct, then with a fault."""
    out = tmp_path_factory.mktemp("releases")
    policy = out / "policy.py"
    policy.write_text(CORRECT)
    assert check(f"{policy}:Policy", out / "before", profile="lru") == UNJUDGED
    policy.write_text(NEWEST_FIRST_FAULT)
    os.utime(policy, (1, 1))  # a new source, whatever the bytecode cache holds
    assert check(f"{policy}:Policy", out / "after", profile="lru") == 1
    return out / "before.json", out / "after.json"


def test_matrix_page_has_a_column_per_run_and_links_failures(four: list[Path], tmp_path: Path
                                                             ) -> None:
    page_path = tmp_path / "matrix.html"
    assert main(["report", *map(str, four), "--html", str(page_path), "-q"]) == 0
    page = Page(page_path.read_text(encoding="utf-8"))
    [matrix] = page.find("table", class_="matrix")
    head = [th.text.strip() for th in matrix.children[1].children[0].children]
    assert head[0] == "Requirement" and len(head) == 5
    assert head[1].startswith("LRUCachePolicy") and head[2].startswith("ARCCachePolicy")
    links = {a.attrs["href"] for e in page.find("td") for a in e.children if a.tag == "a"}
    assert links == {"#run3-failure-EVICT-IDLE-ONLY", "#run4-failure-LRU-EVICT-ORDER"}
    for link in links:
        [section] = page.find("section", id=link[1:])
        assert page.find("table", class_="timeline") and "Reproduce" in section.text
    rows = matrix_rows(label_runs([(str(p), load_report(p)) for p in four]))
    arc_only = [r for r in rows if r.requirement.startswith("ARC-")]
    assert arc_only and all(r.cells[0] is None and r.cells[1] is not None for r in arc_only)
    # core's rows first, then each profile's
    assert not rows[0].requirement.startswith(("ARC-", "LRU-"))


def test_diff_of_two_runs_of_one_target_shows_the_changed_rows(
        releases: tuple[Path, Path], tmp_path: Path) -> None:
    before, after = releases
    runs = label_runs([(str(before), load_report(before)), (str(after), load_report(after))],
                      ["before", "after"])
    assert diff_pairs(runs) == [(0, 1)]
    found = {c.requirement: c for c in changes(runs[0], runs[1])}
    fault = found.pop("LRU-EVICT-ORDER")
    assert (fault.before, fault.after, fault.what) == ("pass", "fail", "now fails")
    assert "returned [1, 0]" in fault.after_message
    # the failing run searched only shorter sequences after the failure, so
    # what else changed is what it no longer reached
    assert all((c.before, c.after) == ("pass", "not-tested") for c in found.values())
    back = {c.requirement: c.what for c in changes(runs[1], runs[0])}
    assert back["LRU-EVICT-ORDER"] == "no longer fails (now pass)"
    assert changes(runs[0], runs[0]) == []

    page_path, summary = tmp_path / "diff.html", tmp_path / "summary.md"
    assert main(["report", str(before), str(after), "--label", "before", "--label", "after",
                 "--html", str(page_path), "--markdown", str(summary), "-q"]) == 0
    page = Page(page_path.read_text(encoding="utf-8"))
    [table] = page.find("table", class_="changes")
    body = table.children[2].children
    assert len(body) == len(found) + 1
    assert any("LRU-EVICT-ORDER" in row.text and "now fails" in row.text for row in body)
    text = summary.read_text()
    assert "### What changed from before to after" in text
    assert ("| LRU-EVICT-ORDER | ✓ PASS | ✗ FAIL | now fails: evict(2, set()) returned [1, 0]"
            in text)


def test_runs_of_one_target_are_compared_with_the_previous_one(
        four: list[Path], releases: tuple[Path, Path]) -> None:
    reports = [(str(p), load_report(p)) for p in [*four, *releases]]
    runs = label_runs(reports)
    assert diff_pairs(runs) == [(4, 5)]
    assert len({run.label for run in runs}) == len(runs)  # labels made unique


def test_markdown_summary_lists_what_does_not_pass_everywhere(
        four: list[Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", *map(str, four), "--markdown", "-"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("## policyspec: 4 runs")
    assert "| g09_victims_newest_first:Policy | `" in text
    section = text.split("### Requirements that do not pass in every run")[1].split("<details>")[0]
    assert "| ARC-INSERT-T1 |" not in section  # passes where the profile has it
    assert "| EVICT-IDLE-ONLY | MUST | ✓ PASS | ✓ PASS | ✗ FAIL | ✓ PASS |" in section
    assert "| API-NO-RAISE |" not in section  # passes in every run
    assert "<details><summary>The whole matrix</summary>" in text


def test_labels_must_match_the_reports(four: list[Path], capsys: pytest.CaptureFixture[str]
                                       ) -> None:
    assert main(["report", *map(str, four), "--label", "only-one"]) == 2
    assert "4 reports" in capsys.readouterr().err
