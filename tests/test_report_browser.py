"""The report pages in a real browser (headless Chromium): what a person
sees. The verdict, the failing row, the timeline drawn with its cells
coloured by state, the copy button copying the snippet, a matrix cell
leading to its failure. Screenshots go to pytest's temporary directory,
never into the repository.

Skipped only where Chromium is not installed (CI installs Debian's
``chromium`` package, .ci/run)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from chromium import Browser, chromium_path
from report_pages import ARC, LRU, NEWEST_FIRST, READ_VICTIM, UNJUDGED, check

from policyspec.cli import main

CHROMIUM = chromium_path()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (Debian: apt-get install chromium)")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert CHROMIUM is not None
    with Browser(CHROMIUM, width=1280, height=900) as opened:
        yield opened


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("browser")
    assert check(READ_VICTIM, out / "fail") == 1
    assert check(LRU, out / "lru", profile="lru") == UNJUDGED
    assert check(ARC, out / "arc", "--capacity", "3", profile="arc") == UNJUDGED
    assert check(NEWEST_FIRST, out / "g09", profile="lru") == 1
    return out


def _visible(browser: Browser, selector: str) -> list[dict[str, float]]:
    """Size and position of every element matching ``selector`` that is
    rendered (not display:none, not visibility:hidden)."""
    found: list[dict[str, float]] = browser.evaluate(
        f"Array.from(document.querySelectorAll({json.dumps(selector)})).filter(e => "
        "getComputedStyle(e).visibility !== 'hidden' && e.getClientRects().length > 0)"
        ".map(e => {const r = e.getBoundingClientRect(); "
        "return {x: r.x, y: r.y + scrollY, width: r.width, height: r.height}})")
    return found


def test_failing_run_page_shows_verdict_failing_row_and_timeline(
        browser: Browser, runs: Path, tmp_path: Path) -> None:
    browser.open(runs / "fail.html")
    seen = browser.evaluate("document.body.innerText")
    assert "Verdict: FAIL" in seen
    assert "EVICT-IDLE-ONLY (MUST)" in seen
    row = browser.evaluate(
        "Array.from(document.querySelectorAll('table.requirements tr'))"
        ".filter(r => r.innerText.includes('EVICT-IDLE-ONLY')).map(r => r.innerText)")
    assert len(row) == 1 and row[0].split()[:2] == ["✗", "FAIL"]
    assert _visible(browser, "tr.row-fail")[0]["height"] > 10

    cells = _visible(browser, "table.timeline td")
    assert len(cells) == 12  # two keys, six steps (the manager's witness)
    assert all(c["width"] >= 20 and c["height"] >= 20 for c in cells)
    rows = [cells[:6], cells[6:]]
    for row in rows:  # a row per key, its steps side by side
        assert [round(c["y"]) for c in row] == [round(row[0]["y"])] * 6
        assert [c["x"] for c in row] == sorted(c["x"] for c in row)
    assert rows[0][0]["y"] < rows[1][0]["y"]
    colours = browser.evaluate(
        "Array.from(document.querySelectorAll('table.timeline td'))"
        ".map(e => getComputedStyle(e).backgroundColor)")
    # key 0: in flight, idle, then being read to the end
    assert len({colours[0], colours[1], colours[2]}) == 3 and len(set(colours[2:6])) == 1
    victim = browser.evaluate(
        "(() => { const c = document.querySelector('table.timeline td.victim'); "
        "return [c.innerText, getComputedStyle(c).borderTopColor, "
        "getComputedStyle(document.querySelector('table.timeline td.c-idle')).borderTopColor] "
        "})()")
    assert victim[0].startswith("R✕")  # being read, and returned as a victim
    assert victim[1] != victim[2]  # its border is drawn
    legend = browser.evaluate("document.querySelector('ul.legend').innerText")
    assert "being read" in legend and "victim" in legend

    shot = browser.screenshot(tmp_path / "failing-run.png")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


def test_copy_button_copies_the_snippet(browser: Browser, runs: Path) -> None:
    browser.send("Browser.grantPermissions",
                 {"permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
    browser.open(runs / "fail.html")
    browser.send("Page.bringToFront", page=True)
    assert _visible(browser, "button.copy")
    status = browser.evaluate(
        "document.querySelector('button.copy').click(); new Promise(done => setTimeout(() => "
        "done(document.querySelector('.copy-status').textContent), 500))")
    assert status in ("Copied.", "Selected: press Ctrl+C (or Cmd+C) to copy.")
    if status == "Copied.":
        copied = browser.evaluate("navigator.clipboard.readText()")
        snippet = browser.evaluate("document.querySelector('pre').textContent")
        assert copied == snippet and "policy.evict(" in copied


def test_without_scripts_the_snippet_stays_and_the_button_hides(
        browser: Browser, runs: Path) -> None:
    browser.open(runs / "fail.html", scripts=False)
    try:
        assert not _visible(browser, "button.copy")
        assert "policy.evict(" in browser.evaluate("document.querySelector('pre').innerText")
        assert "Verdict: FAIL" in browser.evaluate("document.body.innerText")
    finally:
        browser.open(runs / "fail.html")


def test_matrix_cell_leads_to_its_failure(browser: Browser, runs: Path, tmp_path: Path) -> None:
    page = tmp_path / "matrix.html"
    assert main(["report", *(str(runs / f"{n}.json") for n in ("lru", "arc", "fail", "g09")),
                 "--html", str(page), "-q"]) == 0
    browser.open(page)
    headers = browser.evaluate(
        "Array.from(document.querySelectorAll('table.matrix thead th')).map(e => e.innerText)")
    assert [h.split("\n")[0] for h in headers] == [
        "Requirement", "LRUCachePolicy", "ARCCachePolicy",
        "mark_non_evictable_does_not_pin:Policy", "g09_victims_newest_first:Policy"]
    failing = browser.evaluate(
        "Array.from(document.querySelectorAll('table.matrix td a')).map(a => "
        "[a.closest('tr').querySelector('th').innerText.split('\\n')[0], a.innerText.trim(), "
        "a.getAttribute('href')])")
    assert sorted(f[:2] for f in failing) == [["EVICT-IDLE-ONLY", "✗ FAIL"],
                                              ["LRU-EVICT-ORDER", "✗ FAIL"]]
    target = next(f[2] for f in failing if f[0] == "LRU-EVICT-ORDER")
    browser.evaluate(f"document.querySelector('a[href=\"{target}\"]').click()")
    where = browser.evaluate(
        f"(() => {{ const s = document.querySelector({json.dumps(target)}); "
        "const r = s.getBoundingClientRect(); return [location.hash, r.top, innerHeight, "
        "s.innerText] })()")
    assert where[0] == target and -2 <= where[1] < where[2]  # scrolled to it (subpixel)
    assert "LRU-EVICT-ORDER" in where[3] and "returned [1, 0]" in where[3]
    timeline = _visible(browser, f"{target} table.timeline td")
    g09 = json.loads((runs / "g09.json").read_text())["failures"][0]
    assert len(timeline) == 2 * len(g09["actions"])  # two keys, one cell per step
    assert all(c["width"] >= 20 for c in timeline)
    browser.screenshot(tmp_path / "matrix.png")
