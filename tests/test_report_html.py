"""The HTML pages as files: self-contained, accessible markup, the failure
shown with its requirement text, timeline and snippet; the trace as data in
the JSON report; the timeline's key states. (tests/test_report_browser.py
looks at the same pages in Chromium.)"""

from __future__ import annotations

import itertools
import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from report_pages import (
    ARC,
    IN_FLIGHT_VICTIM,
    LRU,
    NEWEST_FIRST,
    READ_VICTIM,
    UNJUDGED,
    Page,
    check,
    external_references,
)

from policyspec.cli import main
from policyspec.model.step import PREDICT, ProfileModel
from policyspec.profiles import get_profile
from policyspec.registry import spec_dir
from policyspec.reports.html import render_run_page
from policyspec.reports.report import load_report
from policyspec.reports.timeline import ABSENT, IDLE_STATE, IN_FLIGHT_STATE, READ, timeline
from policyspec.reports.trace_record import decode_action, encode_action, record_actions
from policyspec.subject import subject_from_class
from policyspec.vectors import read_vectors, vector_files
from policyspec.vectors.replay_report import actions_of

VECTORS = Path(__file__).resolve().parent.parent / "conformance" / "vectors"


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("pages")
    assert check(READ_VICTIM, out / "fail") == 1
    assert check(LRU, out / "pass", profile="lru") == UNJUDGED
    assert main(["replay", str(VECTORS), IN_FLIGHT_VICTIM, "-q",
                 "--html-report", str(out / "replay.html")]) == 1
    assert check(ARC, out / "arc", "--capacity", "3", profile="arc") == UNJUDGED
    assert check(NEWEST_FIRST, out / "g09", profile="lru") == 1
    assert main(["report", str(out / "pass.json"), str(out / "arc.json"), str(out / "fail.json"),
                 str(out / "g09.json"), "--html", str(out / "matrix.html"), "-q"]) == 0
    return {name: out / f"{name}.html" for name in ("fail", "pass", "replay", "matrix")}


@pytest.mark.parametrize("name", ["fail", "pass", "replay", "matrix"])
def test_page_has_no_external_reference(pages: dict[str, Path], name: str) -> None:
    text = pages[name].read_text(encoding="utf-8")
    assert external_references(text) == []
    assert "<script" in text and "<style>" in text  # inline, not left out


def test_external_reference_check_can_fail(pages: dict[str, Path]) -> None:
    text = pages["fail"].read_text(encoding="utf-8")
    for added in ('<script src="https://cdn.example/x.js"></script>',
                  '<link rel="stylesheet" href="style.css">',
                  '<style>@font-face { src: url(font.woff2); }</style>',
                  '<a href="https://example.org/">spec</a>'):
        assert external_references(text.replace("</body>", added + "</body>")), added


@pytest.mark.parametrize("name", ["fail", "pass", "replay", "matrix"])
def test_tables_have_captions_and_scoped_headers(pages: dict[str, Path], name: str) -> None:
    page = Page(pages[name].read_text(encoding="utf-8"))
    tables = page.find("table")
    assert tables
    for table in tables:
        assert table.children and table.children[0].tag == "caption", table.attrs
        assert table.children[0].text.strip()
    headers = page.find("th")
    assert headers and all(th.attrs.get("scope") in ("col", "row") for th in headers)
    assert page.find("html")[0].attrs["lang"] == "en"


def test_failing_page_shows_the_failure(pages: dict[str, Path]) -> None:
    page = Page(pages["fail"].read_text(encoding="utf-8"))
    assert "Verdict: FAIL" in page.find("span", class_="verdict")[0].text
    [row] = page.find("tr", class_="row-fail")
    assert "EVICT-IDLE-ONLY" in row.text and "FAIL" in row.text
    [link] = [a for a in page.find("a") if a.text == "EVICT-IDLE-ONLY"
              and a.attrs["href"] == "#failure-EVICT-IDLE-ONLY"][:1]
    [section] = page.find("section", id=link.attrs["href"][1:])
    # the requirement's sentence from spec/evict.md, what came back, the snippet
    assert "Every victim MUST be idle when evict is called" in " ".join(section.text.split())
    assert "returned [0]" in section.text
    [button] = page.find("button", class_="copy")
    assert "EVICT-IDLE-ONLY" in button.attrs["aria-label"] and "hidden" in button.attrs
    [pre] = page.find("pre", id=button.attrs["data-copy"])
    assert "policy.evict(1, set())" in pre.text
    [status] = page.find("span", id=button.attrs["data-status"])
    assert status.attrs["role"] == "status"


def test_failing_page_draws_the_timeline(pages: dict[str, Path]) -> None:
    page = Page(pages["fail"].read_text(encoding="utf-8"))
    assert len(page.find("table", class_="timeline")) == 1
    cells = [e for e in page.elements if e.tag == "td" and "c-" in e.attrs.get("class", "")]
    # The manager's witness, six steps: key 0 stored, then read; key 1
    # stored, so that evict(1) has an idle block to ask for (the manager
    # asks only then); the failing evict takes key 0, being read.
    assert [c.attrs["class"].split()[0] for c in cells] == [
        "c-in-flight", "c-idle", "c-being-read", "c-being-read", "c-being-read", "c-being-read",
        "c-absent", "c-absent", "c-absent", "c-in-flight", "c-idle", "c-idle"]
    assert "victim" in cells[5].attrs["class"] and "failing-step" in cells[5].attrs["class"]
    assert "returned as a victim" in cells[5].text
    assert "victim" not in cells[11].attrs["class"] and "failing-step" in cells[11].attrs["class"]
    assert "".join(c.text[0] for c in cells) == "FIRRRR···FII"
    legend = page.find("ul", class_="legend")[0].text
    for word in ("absent", "in flight", "idle", "being read", "victim", "protected"):
        assert word in legend


def test_passing_page_lists_every_requirement_with_checks(pages: dict[str, Path]) -> None:
    page = Page(pages["pass"].read_text(encoding="utf-8"))
    report = load_report(pages["pass"].with_suffix(".json"))
    rows = page.find("table", class_="requirements")[0].children[2].children
    assert len(rows) == len(report.requirements)
    for row, req in zip(rows, report.requirements, strict=True):
        assert req.id in row.text and f"{req.checks:,}" in row.text
    assert not page.find("section", class_="failure")
    # No failure, and the MUSTs the exhaustive engine does not exercise are named.
    assert "Verdict: UNJUDGED" in page.find("span", class_="verdict")[0].text
    assert report.verdict_reason in page.find("p", class_="verdict-reason")[0].text


def test_replay_page_has_a_row_per_case_and_a_timeline_per_failure(
        pages: dict[str, Path]) -> None:
    page = Page(pages["replay"].read_text(encoding="utf-8"))
    rows = page.find("table", class_="requirements")[0].children[2].children
    failing = page.find("tr", class_="row-fail")
    sections = page.find("section", class_="failure")
    assert len(rows) > len(failing) == len(sections) > 0
    assert any("V9-in-flight-never-evicted" in row.text for row in failing)
    assert len(page.find("table", class_="timeline")) == len(sections)


def test_json_failure_carries_actions_with_observed_victims(pages: dict[str, Path]) -> None:
    data = json.loads(pages["fail"].with_suffix(".json").read_text())
    schema = json.loads((spec_dir() / "report.schema.json").read_text())
    jsonschema.validate(data, schema)
    [failure] = data["failures"]
    assert failure["actions"] == [
        {"op": "insert", "key": 0, "ref_cnt": -1},
        {"op": "finish_store", "key": 0},
        {"op": "start_read", "key": 0},
        {"op": "insert", "key": 1, "ref_cnt": -1},
        {"op": "finish_store", "key": 1},
        {"op": "evict", "n": 1, "protected": [], "victims": [0]},
    ]


def test_schema_rejects_a_malformed_action(pages: dict[str, Path]) -> None:
    data = json.loads(pages["fail"].with_suffix(".json").read_text())
    schema = json.loads((spec_dir() / "report.schema.json").read_text())
    data["failures"][0]["actions"][0] = {"op": "insert", "key": "zero"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, schema)


def test_report_read_back_renders_the_same_page(pages: dict[str, Path]) -> None:
    report = load_report(pages["fail"].with_suffix(".json"))
    assert render_run_page(report) == pages["fail"].read_text(encoding="utf-8")


# -- the trace as data, and the timeline ----------------------------------------


def _newest_first() -> Any:
    class Newest:
        """Keeps idle keys in a list; evicts the most recent ones first."""

        def __init__(self, cache_capacity: int) -> None:
            self.blocks: dict[Any, Any] = {}
            self.idle: list[Any] = []

        def get(self, key: Any) -> Any:
            return self.blocks.get(key)

        def insert(self, key: Any, block: Any) -> None:
            self.blocks[key] = block
            if block.ref_cnt == 0:
                self.idle.append(key)

        def remove(self, key: Any) -> None:
            self.blocks.pop(key, None)
            if key in self.idle:
                self.idle.remove(key)

        def touch(self, keys: Collection[Any]) -> None:
            for key in reversed(list(keys)):
                if key in self.idle:
                    self.idle.remove(key)
                    self.idle.append(key)

        def mark_evictable(self, key: Any) -> None:
            self.idle.append(key)

        def mark_non_evictable(self, key: Any) -> None:
            self.idle.remove(key)

        def evict(self, n: int, protected: Collection[Any]) -> Any:
            if n == 0:
                return []
            chosen = [k for k in reversed(self.idle) if k not in protected][:n]
            if len(chosen) < n:
                return None
            for key in chosen:
                self.idle.remove(key)
            return [(key, self.blocks.pop(key)) for key in chosen]

        def clear(self) -> None:
            self.blocks.clear()
            self.idle.clear()

    return Newest


def test_record_keeps_the_victims_the_policy_chose() -> None:
    subject = subject_from_class(_newest_first())
    trace = [("insert", 0, 0), ("insert", 1, 0), ("evict", 1, frozenset()), ("start_read", 0)]
    records = record_actions(subject, get_profile("core"), 8, trace, "API-NO-RAISE")
    assert records[2] == {"op": "evict", "n": 1, "protected": [], "victims": [1]}
    line = timeline(records)
    after_evict = line.steps[2].cells
    assert after_evict[1].state == ABSENT and after_evict[1].victim
    assert after_evict[0].state == IDLE_STATE and not after_evict[0].victim
    # the seed LRU would have taken key 0, and start_read(0) would be illegal
    assert line.steps[3].cells[0].state == IDLE_STATE  # the failing step: as it found key 0


def test_timeline_without_recorded_victims_says_so() -> None:
    records = [encode_action(a) for a in
               [("insert", 0, 0), ("insert", 1, 0), ("evict", 1, frozenset()), ("get", 1)]]
    line = timeline(records)
    assert "not recorded" in line.steps[2].note
    assert line.steps[2].cells[0].state == ABSENT  # the seed LRU's choice, said in the note


def test_timeline_states_follow_the_model() -> None:
    trace = [("insert", 0, -1), ("insert", 1, 0), ("finish_store", 0), ("start_read", 0),
             ("start_read", 0), ("end_read", 0), ("touch", (1, 0)), ("remove", 1),
             ("evict", 0, frozenset({0}))]
    line = timeline([encode_action(a) for a in trace])
    states = [(s.cells[0].state, s.cells[0].ref_cnt, s.cells[1].state) for s in line.steps]
    assert states == [
        (IN_FLIGHT_STATE, -1, ABSENT), (IN_FLIGHT_STATE, -1, IDLE_STATE),
        (IDLE_STATE, 0, IDLE_STATE), (READ, 1, IDLE_STATE), (READ, 2, IDLE_STATE),
        (READ, 1, IDLE_STATE), (READ, 1, IDLE_STATE), (READ, 1, ABSENT),
        (READ, 1, ABSENT),  # the failing step shows the keys as it found them
    ]
    assert line.steps[6].cells[0].named and line.steps[6].cells[1].named
    assert line.steps[8].cells[0].protected and line.steps[8].failing


def test_timeline_refuses_an_illegal_trace() -> None:
    with pytest.raises(ValueError, match="caller contract"):
        timeline([encode_action(("start_read", 0))])


REQUEST_TRACE = [
    ("set_positions", 0, ((1, 16), (2, 32))), ("on_request_access", 0, (1, 2)),
    ("on_store_miss", 0, (1, 2)), ("insert", 1, -1, 0), ("insert", 2, -1, 0),
    ("finish_store", 1), ("on_request_finished", 0, ((1, 2),), frozenset({2}), frozenset()),
]
"""The request level of vLLM 0.33 (model/request.py): hooks between the calls."""


def test_actions_round_trip_through_json() -> None:
    trace = [("insert", 3, -1), ("finish_store", 3), ("touch", (3, 1, 3)),
             ("evict", 2, frozenset({1, 3})), ("get", 2), ("clear",), *REQUEST_TRACE]
    records = json.loads(json.dumps([encode_action(a) for a in trace]))
    assert [decode_action(r) for r in records] == trace


def test_schema_accepts_every_kind_of_action(pages: dict[str, Path]) -> None:
    data = json.loads(pages["fail"].with_suffix(".json").read_text())
    schema = json.loads((spec_dir() / "report.schema.json").read_text())
    trace = [("insert", 3, 0), ("start_read", 3), ("end_read", 3), ("remove", 3),
             ("touch", (3,)), ("evict", 1, frozenset({3})), ("get", 3), ("clear",),
             *REQUEST_TRACE]
    data["failures"][0]["actions"] = [encode_action(a) for a in trace]
    jsonschema.validate(data, schema)


def test_timeline_draws_request_hooks_without_moving_keys() -> None:
    line = timeline([encode_action(a) for a in REQUEST_TRACE])
    assert line.keys == [1, 2]
    assert [s.cells[1].state for s in line.steps] == [
        ABSENT, ABSENT, ABSENT, IN_FLIGHT_STATE, IN_FLIGHT_STATE, IDLE_STATE, IDLE_STATE]
    assert line.steps[1].cells[1].named and line.steps[1].cells[2].named


def test_every_vector_case_reads_back_as_caller_actions() -> None:
    for path in vector_files(VECTORS):
        for case in read_vectors(path)[1]:
            steps = actions_of(case["calls"])
            # the spans cover every call once, in order, and the model
            # expands each action into the very calls of its span
            assert steps[0].first == 0 and steps[-1].last == len(case["calls"]) - 1
            assert all(a.last + 1 == b.first for a, b in itertools.pairwise(steps))
            model = ProfileModel.fresh(None, None)
            for step in steps:
                expanded = [c[0] for c in model.calls(step.action)]
                called = [c["op"] for c in case["calls"][step.first:step.last + 1]]
                assert expanded == called, (case["name"], step)
                for call in model.calls(step.action):
                    observed = step.victims if step.known else PREDICT
                    model = (model.step(call, observed) if call[0] == "evict"
                             else model.step(call)).model
