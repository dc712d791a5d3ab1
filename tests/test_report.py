"""The JSON report validates against its schema; the JUnit XML parses."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from policyspec.files import write_atomic
from policyspec.profiles import get_profile
from policyspec.reference import LRUCachePolicy
from policyspec.registry import spec_dir
from policyspec.reports.report import Report, dumps
from policyspec.session import run_check
from policyspec.subject import subject_from_class


class IgnoresProtected(LRUCachePolicy):  # type: ignore[type-arg]
    def evict(self, n, protected):  # type: ignore[no-untyped-def]
        return super().evict(n, set())


@pytest.fixture(scope="module")
def reports() -> dict[str, Report]:
    lru = get_profile("lru")
    return {
        "pass": run_check(subject_from_class(LRUCachePolicy), lru, budget=2.0, seed=3),
        "fail": run_check(subject_from_class(IgnoresProtected), lru, budget=2.0, seed=3),
    }


def schema() -> dict[str, object]:
    loaded: dict[str, object] = json.loads((spec_dir() / "report.schema.json").read_text())
    return loaded


@pytest.mark.parametrize("kind", ["pass", "fail"])
def test_json_report_validates_against_schema(reports: dict[str, Report], kind: str) -> None:
    document = json.loads(dumps(reports[kind]))
    jsonschema.validate(document, schema())
    assert document["verdict"] == kind


def test_schema_rejects_a_report_without_verdict(reports: dict[str, Report]) -> None:
    document = json.loads(dumps(reports["pass"]))
    del document["verdict"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, schema())


def test_failure_carries_trace_and_repro(reports: dict[str, Report]) -> None:
    failures = reports["fail"].failures
    assert failures[0].requirement == "EVICT-UNPROTECTED"
    assert failures[0].trace and "evict(" in failures[0].trace[-1]
    assert "policy.evict(" in failures[0].repro


def test_junit_xml_has_one_case_per_requirement(reports: dict[str, Report]) -> None:
    root = ET.fromstring(reports["fail"].to_junit())
    cases = root.findall("testcase")
    assert len(cases) == len(reports["fail"].requirements)
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    assert "EVICT-UNPROTECTED" in failed
    assert root.get("failures") == str(len(failed))


def test_write_atomic_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "out" / "report.json"
    write_atomic(target, "{}\n")
    write_atomic(target, '{"a": 1}\n')
    assert json.loads(target.read_text()) == {"a": 1}
    assert [p.name for p in target.parent.iterdir()] == ["report.json"]
