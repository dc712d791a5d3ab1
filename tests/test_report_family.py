"""One report family for every command: ``policyspec check`` and
``policyspec check-history`` write the same JSON report (read back by the
same code, ``reports.report.load_report``), JUnit XML, HTML page and
markdown summary, with the same flags (``reports.write.add_report_flags``),
so one CI gate reads both."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from policyspec.cli import main
from policyspec.reports.report import FAIL, Report, load_report

HERE = Path(__file__).parent
FAULTY = HERE / "faulty" / "v01_ignores_protected.py"


def _gate(report: Report) -> tuple[str, list[str]]:
    """What a CI gate reads of a report: the verdict and the failing ids,
    each failure with a trace and a FAIL status row."""
    failing = [f.requirement for f in report.failures]
    for failure in report.failures:
        assert failure.trace, failure
    rows = {r.id: r.status for r in report.requirements}
    assert all(rows.get(rid) == FAIL for rid in failing if rid in rows)
    return report.verdict, failing


def _outputs(tmp_path: Path, name: str) -> list[str]:
    return ["--json-report", str(tmp_path / f"{name}.json"),
            "--junit-xml", str(tmp_path / f"{name}.xml"),
            "--html-report", str(tmp_path / f"{name}.html"),
            "--markdown", str(tmp_path / f"{name}.md")]


def test_check_and_check_history_write_one_report_family(tmp_path: Path) -> None:
    history = tmp_path / "h.jsonl"
    assert main(["record", f"{FAULTY}:Policy", "--out", str(history), "--calls", "5000"]) == 0
    assert main(["check-history", str(history), *_outputs(tmp_path, "history")]) == 1
    assert main(["check", f"{FAULTY}:Policy", "--budget", "1", "--engine", "fast",
                 *_outputs(tmp_path, "check")]) == 1
    for name in ("history", "check"):
        verdict, failing = _gate(load_report(tmp_path / f"{name}.json"))
        assert (verdict, failing[:1]) == ("fail", ["EVICT-UNPROTECTED"]), (name, failing)
        suite = ET.parse(tmp_path / f"{name}.xml").getroot()
        assert int(suite.get("failures", "0")) >= 1
        page = (tmp_path / f"{name}.html").read_text(encoding="utf-8")
        assert "EVICT-UNPROTECTED" in page and "FAIL" in page
        assert "EVICT-UNPROTECTED" in (tmp_path / f"{name}.md").read_text(encoding="utf-8")


def test_a_conforming_history_passes_the_same_gate(tmp_path: Path) -> None:
    history = tmp_path / "h.jsonl"
    assert main(["record", "policyspec.reference:LRUCachePolicy", "--out", str(history),
                 "--calls", "3000"]) == 0
    assert main(["check-history", str(history), "--profile", "core",
                 "--json-report", str(tmp_path / "r.json")]) == 0
    verdict, failing = _gate(load_report(tmp_path / "r.json"))
    assert (verdict, failing) == ("pass", [])
