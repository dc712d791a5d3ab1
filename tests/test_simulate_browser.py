"""``policyspec simulate``'s page in a real browser (headless Chromium):
the miss-ratio curve is drawn where its numbers say (each policy's points
left to right by cache size, higher for a higher miss ratio, in the
policy's colour, named in the legend), and the table has a row per cell.
The screenshot goes to pytest's temporary directory.

Skipped only where Chromium is not installed (CI installs it, .ci/run)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from chromium import Browser, chromium_path

from policyspec.cli import main
from policyspec.workload.curve import COLOURS

CHROMIUM = chromium_path()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (Debian: apt-get install chromium)")
ADAPTIVE = str(Path(__file__).parent / "correct" / "w_tinylfu.py") + ":Policy"


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Browser, dict[str, object]]]:
    out = tmp_path_factory.mktemp("simulate-page")
    assert main(["simulate", ADAPTIVE, "--requests", "150", "--capacity", "64", "--capacity",
                 "256", "--capacity", "2048", "-q", "--html-report", str(out / "page.html"),
                 "--json-report", str(out / "page.json")]) == 0
    assert CHROMIUM is not None
    with Browser(CHROMIUM, width=1280, height=900) as browser:
        browser.open(out / "page.html")
        browser.screenshot(out / "page.png")
        assert (out / "page.png").stat().st_size > 10_000
        yield browser, json.loads((out / "page.json").read_text())


def test_each_policy_is_a_line_of_points_placed_by_size_and_miss_ratio(
        page: tuple[Browser, dict[str, object]]) -> None:
    browser, data = page
    series = browser.evaluate("""
      Array.from(document.querySelectorAll('svg.miss-ratio-curve g.series')).map(g => ({
        label: g.getAttribute('data-label'),
        line: !!g.querySelector('polyline'),
        points: Array.from(g.querySelectorAll('.point')).map(p => {
          const r = p.getBoundingClientRect();
          return {x: r.x + r.width / 2, y: r.y + r.height / 2, w: r.width,
                  size: +p.getAttribute('data-size'), ratio: +p.getAttribute('data-miss-ratio'),
                  fill: getComputedStyle(p).fill};
        })}))""")
    assert [s["label"] for s in series] == ["w_tinylfu.py:Policy", "reference LRU",
                                            "reference ARC"]
    cells = data["cells"]
    assert isinstance(cells, list)
    points = [p for s in series for p in s["points"]]
    for s in series:
        assert s["line"] and [p["size"] for p in s["points"]] == [64, 256, 2048]
        xs = [p["x"] for p in s["points"]]
        assert xs == sorted(xs) and xs[0] < xs[1] < xs[2]
        assert all(p["w"] >= 8 for p in s["points"])  # drawn, and large enough to see
        expected = [round(1 - c["hit_rate"], 6) for c in cells if c["policy"] == s["label"]]
        assert [p["ratio"] for p in s["points"]] == pytest.approx(expected)
    # Higher on the screen is a higher miss ratio, on one scale for every policy.
    for a in points:
        for b in points:
            if a["ratio"] > b["ratio"] + 0.005:
                assert a["y"] < b["y"], (a, b)
    fills = {s["label"]: {p["fill"] for p in s["points"]} for s in series}
    assert all(len(f) == 1 for f in fills.values()) and len({*map(frozenset, fills.values())}) == 3


def test_the_picture_has_each_policys_colour_at_its_points(
        page: tuple[Browser, dict[str, object]]) -> None:
    """The curve drawn onto a canvas one policy at a time (the others'
    groups taken out, as points of equal miss ratio overlap): the pixel at
    the centre of each point is the policy's colour, and the background
    between the plot's lines is white."""
    browser, _ = page
    found = browser.evaluate("""
      (async () => {
        const svg = document.querySelector('svg.miss-ratio-curve');
        const box = svg.viewBox.baseVal;
        const groups = Array.from(svg.querySelectorAll('g.series'));
        const out = [];
        for (let i = 0; i < groups.length; i++) {
          const alone = svg.cloneNode(true);
          Array.from(alone.querySelectorAll('g.series')).forEach((g, j) => {
            if (j !== i) g.remove(); });
          const image = new Image();
          await new Promise(done => {
            image.onload = done;
            image.src = 'data:image/svg+xml;base64,' +
              btoa(unescape(encodeURIComponent(new XMLSerializer().serializeToString(alone))));
          });
          const canvas = document.createElement('canvas');
          canvas.width = box.width; canvas.height = box.height;
          const context = canvas.getContext('2d');
          context.drawImage(image, 0, 0);
          const pixel = (x, y) => Array.from(context.getImageData(Math.round(x), Math.round(y),
                                                                  1, 1).data.slice(0, 3));
          out.push({
            points: Array.from(groups[i].querySelectorAll('.point')).map(p => {
              const r = p.getBBox();
              return pixel(r.x + r.width / 2, r.y + r.height / 2 + 1);
            }),
            corner: pixel(box.width - 5, box.height - 5),
          });
        }
        return out;
      })()""")
    assert len(found) == 3
    for number, drawn in enumerate(found):
        colour = COLOURS[number]
        want = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
        assert len(drawn["points"]) == 3
        for pixel in drawn["points"]:
            assert all(abs(a - b) <= 40 for a, b in zip(pixel, want, strict=True)), (
                number, pixel, want)
        assert drawn["corner"] == [255, 255, 255]


def test_the_legend_and_the_table_name_every_cell(
        page: tuple[Browser, dict[str, object]]) -> None:
    browser, _ = page
    seen = browser.evaluate("document.body.innerText")
    assert "policyspec simulate:" in seen and "Miss-ratio curves" in seen
    legend = browser.evaluate(
        "Array.from(document.querySelectorAll('svg text.legend')).map(t => "
        "[t.textContent, t.getBoundingClientRect().width])")
    assert [label for label, _ in legend] == ["w_tinylfu.py:Policy", "reference LRU",
                                              "reference ARC"]
    assert all(width > 20 for _, width in legend)
    rows = browser.evaluate(
        "Array.from(document.querySelectorAll('table.simulate tbody tr')).map(r => "
        "Array.from(r.children).map(c => c.innerText))")
    assert len(rows) == 9
    assert [row[1] for row in rows] == ["64"] * 3 + ["256"] * 3 + ["2,048"] * 3
    assert all(row[3].endswith("%") for row in rows)
