"""The verdict of a check and its three renderings: terminal text, JSON
(schema ``policyspec-report/1``, spec/report.md) and JUnit XML. The HTML
pages are in ``policyspec.reports.html``; a JSON report is read back with
``load_report`` (for ``policyspec report``).

Files are written atomically (temporary file, then rename), so a reader never
sees half a report.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from policyspec.version import SPEC_VERSION, __version__
from policyspec.witness.steps import numbered

__all__ = [
    "MANAGER_ENGINES",
    "SCHEMA",
    "FailureReport",
    "Report",
    "ReportError",
    "RequirementStatus",
    "dumps",
    "load_report",
    "repro_line",
    "verdict_caveat",
]

SCHEMA = "policyspec-report/1"

PASS, FAIL, NA, NOT_TESTED, XFAIL = "pass", "fail", "n/a", "not-tested", "xfail"


@dataclass
class RequirementStatus:
    id: str
    level: str
    profile: str
    title: str
    status: str
    checks: int = 0
    reason: str = ""
    applies: bool = True
    """Whether the run could judge it: False when the policy's API revision
    lacks the calls it needs, or the run's mode cannot observe it
    (API-PROCESS-ALIVE without --isolate). A MUST that applies and stays
    n/a or not tested leaves the verdict ``unjudged`` (policyspec.reports.verdict)."""


@dataclass
class FailureReport:
    requirement: str
    level: str
    title: str
    message: str
    trace: list[str]
    repro: str
    engine: str
    actions: list[dict[str, Any]] = field(default_factory=list)
    """The trace as data, one object per caller action (``trace_record``):
    what the timeline of the HTML report is drawn from. Empty for failures
    without a trace (cost measurements) and in reports older than the field."""
    found_after_s: float | None = None
    """Seconds from the start of the run until an engine first saw this
    requirement fail (before shrinking); None in reports older than the field."""
    found_after_calls: int | None = None
    """Policy calls the run had made by then."""
    by_manager: bool | None = None
    """Whether vLLM's manager itself could make the trace (else only another
    caller of the policy API could); None in reports older than the field."""
    also_breaks: list[str] = field(default_factory=list)
    """Ids an engine saw this witness break that the route traced back to
    ``requirement`` (an earlier step's fault): they are FAIL too, never PASS."""
    capacity: int | None = None
    """The capacity the policy is built with to replay ``actions`` (an engine
    may find a fault at a capacity of its own); None without a trace and in
    reports older than the field."""
    repro_shown: bool | None = None
    """True: ``repro`` was run in a fresh Python process against the policy
    before the report was written and failed with an AssertionError naming
    the requirement; False: it could not be shown (``repro_result`` says
    why); None: not run (reports older than the field)."""
    repro_result: str = ""
    """One sentence: how the fresh run of ``repro`` ended."""
    reproduced: bool = True
    """False when a replay of the engine's calls on a fresh policy did not
    break the requirement: the message gives both runs' results, the run
    ends in ERROR, and the failure counts toward no verdict."""


def repro_line(failure: FailureReport) -> str:
    """The report's line on whether the snippet was shown to fail; a MUST
    that could not be shown says so plainly (the spec has no exception)."""
    if not failure.reproduced:
        return ("not reproduced: a replay of the same calls on a fresh policy did not break "
                "it, so it is no verdict on the policy")
    if failure.repro_shown is None:
        return "snippet: not run before this report was written"
    if failure.repro_shown:
        return f"snippet shown to fail: {failure.repro_result}"
    must = (" (a MUST: this failure stands on the check's own replays, not on the "
            "snippet)") if failure.level == "MUST" else ""
    return f"snippet NOT shown to fail{must}: {failure.repro_result}"


def _steps(count: int) -> str:
    return f"{count} step" if count == 1 else f"{count} steps"


def _witness(failure: FailureReport) -> str:
    if failure.by_manager is None or not failure.trace:
        return ""
    if failure.by_manager:
        return "; vLLM's manager can make these calls"
    return ("; a caller other than vLLM's manager: it never inserts an idle block, "
            "removes a ready one, or evicts more than it counts idle")


def _found(failure: FailureReport) -> str:
    """When the run first saw the failure (before shrinking it)."""
    if failure.found_after_s is None:
        return "first seen: not recorded"
    calls = failure.found_after_calls or 0
    return (f"first seen after {failure.found_after_s:.2f} s and {calls:,} "
            f"call{'' if calls == 1 else 's'}")


MANAGER_ENGINES = ("vllm-manager", "trace")
"""The engines that drive the policy through an emulated vLLM manager."""


class ReportError(ValueError):
    """A file that is not a policyspec JSON report this version can read."""


@dataclass
class Report:
    target: str
    profile: str
    verdict: str
    requirements: list[RequirementStatus]
    failures: list[FailureReport]
    stats: dict[str, Any]
    api: str = "R3"
    notes: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    """Notes on what the run did, shown in the terminal with ``-v`` only
    (``run_details``); the JSON report keeps them under ``details``."""
    errors: list[str] = field(default_factory=list)
    policyspec_version: str = __version__
    spec_version: str = SPEC_VERSION
    """Versions of the tool and spec that made the report (another's when
    the report was read back from a file)."""
    placeholders: list[str] = field(default_factory=list)
    """Unmodelled vLLM names kept as inert placeholders (``--placeholder``):
    the verdict holds with them (``verdict_caveat``)."""
    verdict_reason: str = ""
    """Why the verdict is what it is, in one line (``policyspec.reports.verdict``):
    the MUSTs left unjudged, the engine errors beside a failure; empty for
    a plain pass or fail."""

    @property
    def emulated(self) -> str:
        """The vLLM release the run stood for, in words: whose API it called
        and, when an engine drove a manager (``MANAGER_ENGINES``), whose
        manager; a replay, a proof or a history called no manager."""
        from policyspec.protocols import emulated

        engines = self.stats.get("engines") or {}
        driven = any(isinstance(engines.get(name), dict) and engines[name].get("calls")
                     for name in MANAGER_ENGINES)
        return emulated(self.api, manager=driven)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "policyspec_version": self.policyspec_version,
            "spec_version": self.spec_version,
            "target": self.target,
            "profile": self.profile,
            "api": self.api,
            "verdict": self.verdict,
            **({"verdict_reason": self.verdict_reason} if self.verdict_reason else {}),
            "requirements": [
                {
                    "id": r.id,
                    "level": r.level,
                    "profile": r.profile,
                    "title": r.title,
                    "status": r.status,
                    "checks": r.checks,
                    **({"reason": r.reason} if r.reason else {}),
                    "applies": r.applies,
                }
                for r in self.requirements
            ],
            "failures": [
                {
                    "requirement": f.requirement,
                    "level": f.level,
                    "message": f.message,
                    "trace": f.trace,
                    "repro": f.repro,
                    "engine": f.engine,
                    "actions": f.actions,
                    "found_after_s": f.found_after_s,
                    "found_after_calls": f.found_after_calls,
                    "by_manager": f.by_manager,
                    "also_breaks": f.also_breaks,
                    "capacity": f.capacity,
                    "repro_shown": f.repro_shown,
                    "repro_result": f.repro_result,
                    "reproduced": f.reproduced,
                }
                for f in self.failures
            ],
            "stats": self.stats,
            "notes": self.notes,
            "details": self.details,
            "errors": self.errors,
            "placeholders": self.placeholders,
        }

    def to_junit(self) -> str:
        failed = sum(1 for r in self.requirements if r.status == FAIL)
        skipped = sum(1 for r in self.requirements if r.status in (NA, NOT_TESTED, XFAIL))
        suite = ET.Element(
            "testsuite",
            name=f"policyspec {self.profile}: {self.target}",
            tests=str(len(self.requirements)),
            failures=str(failed),
            errors=str(len(self.errors)),
            skipped=str(skipped),
            time=f"{float(self.stats.get('seconds', 0.0)):.3f}",
        )
        by_id = {f.requirement: f for f in self.failures}
        for req in self.requirements:
            case = ET.SubElement(
                suite, "testcase", classname=f"policyspec.{req.profile}", name=req.id
            )
            if req.status == FAIL:
                failure = by_id.get(req.id)
                node = ET.SubElement(
                    case, "failure", message=failure.message if failure else req.title
                )
                if failure:
                    node.text = ("\n".join(failure.trace) + "\n\n" + repro_line(failure)
                                 + "\n\n" + failure.repro)
            elif req.status in (NA, NOT_TESTED, XFAIL):
                ET.SubElement(case, "skipped", message=f"{req.status}: {req.reason}".strip())
        for error in self.errors:
            case = ET.SubElement(suite, "testcase", classname="policyspec", name="run")
            ET.SubElement(case, "error", message=error)
        if self.placeholders:
            properties = ET.Element("properties")
            ET.SubElement(properties, "property", name="verdict",
                          value=f"{self.verdict.upper()}{verdict_caveat(self)}")
            ET.SubElement(properties, "property", name="placeholders",
                          value=", ".join(self.placeholders))
            suite.insert(0, properties)
        if self.verdict in ("unjudged", "incomplete"):
            # Not a pass: the MUSTs left unjudged, or the work the time limit
            # cut short, fail the suite, as the exit code does.
            case = ET.SubElement(suite, "testcase", classname="policyspec", name="verdict")
            ET.SubElement(case, "failure", message=f"{self.verdict}: {self.verdict_reason}")
            suite.set("failures", str(failed + 1))
            suite.set("tests", str(len(self.requirements) + 1))
        return ET.tostring(suite, encoding="unicode", xml_declaration=True)

    def to_text(self, verbose: bool = False) -> str:
        """The terminal's report; ``verbose`` (``-v``) adds ``details``."""
        lines = [
            f"policyspec {__version__} (spec {SPEC_VERSION}): {self.target}",
            f"profile {self.profile}, API {self.api} ({self.emulated}), seed "
            f"{self.stats.get('seed')}",
        ]
        lines += [f"note: {n}" for n in self.notes]
        if verbose:
            lines += [f"note: {n}" for n in self.details]
        lines.append("")
        width = max((len(r.id) for r in self.requirements), default=10)
        for req in self.requirements:
            label = {PASS: "PASS", FAIL: "FAIL", NA: "N/A", NOT_TESTED: "NOT TESTED",
                     XFAIL: "XFAIL"}[req.status]
            extra = f"  ({req.reason})" if req.reason else ""
            lines.append(f"  {label:<10} {req.id:<{width}} {req.level:<6} {req.title}{extra}")
        for failure in self.failures:
            lines += [
                "",
                f"FAIL {failure.requirement} ({failure.level}): {failure.title}",
                f"  {failure.message}",
                f"  {_found(failure)}",
                f"  minimal trace ({_steps(len(failure.trace))}, found by {failure.engine}"
                f"{_witness(failure)}):" if failure.trace else
                f"  no trace: a measurement by the {failure.engine} engine",
                *[f"    {line}" for line in numbered(failure.trace)],
                f"  reproduce ({repro_line(failure)}):",
                *[f"    {line}" for line in failure.repro.rstrip().splitlines()],
            ]
        for error in self.errors:
            lines.append(f"ERROR {error}")
        s = self.stats
        lines += [
            "",
            f"{s.get('calls', 0)} checked calls, {s.get('steps', 0)} steps, "
            f"{s.get('examples', 0)} examples in {float(s.get('seconds', 0)):.1f}s",
            f"verdict: {self.verdict.upper()}{verdict_caveat(self)}"
            + (f" ({self.verdict_reason})" if self.verdict_reason else ""),
        ]
        return "\n".join(lines) + "\n"


def verdict_caveat(report: Report) -> str:
    """What the verdict holds with, appended wherever a verdict is shown
    (terminal, JUnit, HTML): ``""``, or `` (holds with placeholders for
    PolicyStats)`` when unmodelled vLLM names were kept inert."""
    if not report.placeholders:
        return ""
    names = dict.fromkeys(n.split("(")[0].rsplit(".", 1)[-1] for n in report.placeholders)
    return f" (holds with placeholders for {', '.join(names)})"


def _from_json(data: Any, origin: str) -> Report:
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise ReportError(f"{origin}: not a {SCHEMA} report (schema: {found!r})")
    try:
        by_id = {r["id"]: r for r in data["requirements"]}
        return Report(
            target=str(data["target"]),
            profile=str(data["profile"]),
            verdict=str(data["verdict"]),
            requirements=[
                RequirementStatus(str(r["id"]), str(r["level"]), str(r["profile"]),
                                  str(r["title"]), str(r["status"]), int(r["checks"]),
                                  str(r.get("reason", "")), bool(r.get("applies", True)))
                for r in data["requirements"]
            ],
            failures=[
                FailureReport(
                    requirement=str(f["requirement"]),
                    level=str(f["level"]),
                    title=str(f.get("title") or by_id.get(f["requirement"], {}).get(
                        "title", f["requirement"])),
                    message=str(f["message"]),
                    trace=[str(line) for line in f["trace"]],
                    repro=str(f["repro"]),
                    engine=str(f["engine"]),
                    actions=list(f.get("actions", [])),
                    found_after_s=f.get("found_after_s"),
                    found_after_calls=f.get("found_after_calls"),
                    by_manager=f.get("by_manager"),
                    also_breaks=[str(r) for r in f.get("also_breaks", [])],
                    capacity=f.get("capacity"),
                    repro_shown=f.get("repro_shown"),
                    repro_result=str(f.get("repro_result", "")),
                    reproduced=bool(f.get("reproduced", True)),
                )
                for f in data["failures"]
            ],
            stats=dict(data["stats"]),
            api=str(data["api"]),
            notes=[str(n) for n in data["notes"]],
            details=[str(n) for n in data.get("details", [])],
            errors=[str(e) for e in data["errors"]],
            policyspec_version=str(data["policyspec_version"]),
            spec_version=str(data["spec_version"]),
            placeholders=[str(n) for n in data.get("placeholders", [])],
            verdict_reason=str(data.get("verdict_reason", "")),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ReportError(f"{origin}: malformed report ({type(exc).__name__}: {exc})") from None


def load_report(path: str | os.PathLike[str]) -> Report:
    """Read a JSON report written by ``--json-report``. Raises ReportError
    (with the file name) when it cannot be read or is not a report."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ReportError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}: not JSON ({exc})") from None
    return _from_json(data, str(path))


def dumps(report: Report) -> str:
    """The JSON report as text."""
    return json.dumps(report.to_json(), indent=2, sort_keys=False) + "\n"
