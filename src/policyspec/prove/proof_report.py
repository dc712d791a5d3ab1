"""What a ``prove`` run established, in words that do not overclaim.

"Confirmed over all paths" is the only outcome reported as proved, and only
within the stated bounds; "not confirmed" is reported as no counterexample
within the budget; every counterexample comes with its story and a pytest
test. ``to_report`` gives the same run as a ``policyspec.report.Report``,
so that ``check``'s writers make its JSON, JUnit and HTML reports: one row
per obligation (as a replay has one per case), each counterexample as check
reports a failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from policyspec.prove.counterexamples import Finding
from policyspec.prove.crosshair_run import (
    CONFIRMED,
    COUNTEREXAMPLE,
    ERROR,
    INTERRUPTED,
    NOT_CONFIRMED,
    SKIPPED,
    STOPPED,
    Budget,
)
from policyspec.reports import report as check_report
from policyspec.reports.verdict import Verdict, counts, decide, exit_code

__all__ = ["ObligationResult", "ProofReport", "obligation_id"]


def obligation_id(name: str) -> str:
    """An obligation's row id in the reports, in the form of a requirement
    id (the JSON schema's): ``evict`` is PROVE-EVICT, ``model.evict``
    PROVE-MODEL-EVICT."""
    return "PROVE-" + name.upper().replace("_", "-").replace(".", "-")

_WORDS = {
    CONFIRMED: "confirmed over all paths",
    NOT_CONFIRMED: "no counterexample within budget (not every path explored)",
    COUNTEREXAMPLE: "COUNTEREXAMPLE",
    ERROR: "ERROR: CrossHair could not analyse it",
    STOPPED: "stopped at the deadline: nothing established",
    SKIPPED: "not run to the end (--fail-fast: a counterexample was found elsewhere)",
    INTERRUPTED: "interrupted before it reported: nothing established",
}


@dataclass
class ObligationResult:
    """One CrossHair job: a model function, or one operation's refinement."""

    name: str
    status: str
    seconds: float
    share: float
    """CPU seconds per condition CrossHair was given."""
    conditions: int
    confirmed: int
    detail: str = ""
    bound: str = ""
    """What the obligation covers, in words (operations: the arguments)."""
    values: int = 0
    """Legal values within the bounds: the paths an exhausted search ran
    (0 when not counted)."""


@dataclass
class ProofReport:
    title: str
    method: str
    bounds: list[str]
    budget: Budget
    results: list[ObligationResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0
    target: str = ""
    profile: str = ""
    api: str = ""
    strict: bool = False

    @property
    def confirmed_findings(self) -> list[Finding]:
        """Reproduced findings that count: MUST ones, SHOULD ones with
        ``strict``."""
        return [f for f in self.findings
                if f.reproduced and counts(f.level, self.strict)]

    @property
    def result(self) -> str:
        """What the search established, in a word: ``counterexample``,
        ``interrupted``, ``error``, ``stopped`` (the deadline stopped an
        obligation), ``proved`` (every obligation confirmed over all paths)
        or ``no counterexample``."""
        statuses = {r.status for r in self.results}
        if self.confirmed_findings:
            return "counterexample"
        for status, word in ((INTERRUPTED, "interrupted"), (ERROR, "error"),
                             (STOPPED, "stopped")):
            if status in statuses:
                return word
        if self.results and statuses == {CONFIRMED}:
            return "proved"
        return "no counterexample"

    @property
    def judged(self) -> Verdict:
        """The verdict by the rule every command shares
        (``policyspec.reports.verdict.decide``), one obligation a row: a
        counted counterexample fails; an interruption, an obligation
        CrossHair could not analyse and one the deadline stopped give
        ``interrupted``, ``error`` and ``incomplete``; an obligation left
        with paths unexplored is not judged, so a run that proved nothing
        wrong but not everything is ``unjudged``, never a pass."""
        return decide(self._rows(), self._failures(), strict=self.strict,
                      errors=self._errors(), interrupted=self.interrupted,
                      incomplete=self._incomplete())

    @property
    def verdict(self) -> str:
        """The verdict's name (``judged``)."""
        return self.judged.name

    @property
    def exit_code(self) -> int:
        """The exit code of the verdict, as every command gives it."""
        return exit_code(self.verdict, bool(self._failures()))

    @property
    def interrupted(self) -> bool:
        """Stopped by a signal (Ctrl-C) before every obligation reported."""
        return any(r.status == INTERRUPTED for r in self.results)

    def _errors(self) -> list[str]:
        return [f"{r.name}: {_WORDS.get(r.status, r.status)}"
                + (f" ({r.detail})" if r.detail else "")
                for r in self.results if r.status == ERROR]

    def _incomplete(self) -> str | None:
        """How much a run the deadline stopped did, in words (None: it was
        not stopped)."""
        stopped = [r.name for r in self.results if r.status == STOPPED]
        if not stopped:
            return None
        return (f"the deadline ({self.budget.deadline:.0f} s) stopped the run before "
                f"{len(stopped)} of {len(self.results)} obligations reported: "
                + ", ".join(stopped))

    def _failures(self) -> list[check_report.FailureReport]:
        """The counted counterexamples, one per requirement broken: as
        ``check`` reports them when the finding has a minimised trace, else
        (the model's, a hand-written pair's) its story and test."""
        failures: list[check_report.FailureReport] = []
        for finding in self.confirmed_findings:
            if any(f.requirement == finding.requirement for f in failures):
                continue
            failures.append(finding.report or check_report.FailureReport(
                requirement=finding.requirement, level=finding.level,
                title=finding.obligation, message="\n".join(finding.lines), trace=[],
                repro=finding.test, engine=f"prove ({finding.obligation})"))
        return failures

    def _rows(self) -> list[check_report.RequirementStatus]:
        failed_in: dict[str, list[str]] = {}
        for finding in self.confirmed_findings:
            failed_in.setdefault(finding.obligation, []).append(finding.requirement)
        return [self._row(r, failed_in.get(r.name, [])) for r in self.results]

    def to_text(self) -> str:
        from policyspec.protocols import emulated

        b = self.budget
        out = [
            f"policyspec prove: {self.title}",
            *([f"api:     {self.api} ({emulated(self.api, manager=False)})"] if self.api else []),
            f"method:  {self.method}",
            *(f"bounds:  {line}" for line in self.bounds),
            f"budget:  {b.seconds:g} s target, {b.workers} CrossHair "
            f"{'process' if b.workers == 1 else 'processes'} at a time; "
            f"{b.per_condition:.1f} CPU s per condition at first, more for later ones "
            f"when earlier ones end early; deadline {b.deadline:.0f} s"
            + (f"; each obligation ends after {b.iterations:,} paths in a row that reach no "
               "new code" if b.iterations else ""),
            "",
        ]
        width = max((len(r.name) for r in self.results), default=10)
        for r in self.results:
            words = _WORDS.get(r.status, r.status)
            if r.status == NOT_CONFIRMED and r.confirmed:
                words += f"; {r.confirmed} of {r.conditions} conditions confirmed"
            paths = f"; {r.values:,} paths" if r.status == CONFIRMED and r.values else ""
            out.append(f"  {r.name:<{width}}  {words}  [{r.seconds:.0f} s; "
                       f"{r.share:.0f} CPU s per condition{paths}]")
            if r.detail:
                out.append(f"  {'':<{width}}  {r.detail}")
        for finding in self.findings:
            out.extend(["", *self._finding(finding)])
        out.extend(["", self._summary(), f"time:    {self.seconds:.0f} s wall clock"])
        return "\n".join(out) + "\n"

    @staticmethod
    def _finding(finding: Finding) -> list[str]:
        if not finding.reproduced:
            return [f"NOT COUNTED ({finding.obligation}):",
                    *(f"  {line}" for line in finding.lines)]
        lines = [f"COUNTEREXAMPLE ({finding.obligation}): {finding.requirement} "
                 f"({finding.level})",
                 *(f"  {line}" for line in finding.lines),
                 f"  reproduced by: {finding.how}",
                 "  pytest test:",
                 "  " + "-" * 60]
        lines.extend(f"  {line}" if line else "" for line in finding.test.splitlines())
        lines.append("  " + "-" * 60)
        return lines

    def to_report(self) -> check_report.Report:
        """The run as ``check`` reports one (module docstring)."""
        verdict = self.judged
        b = self.budget
        return check_report.Report(
            target=self.target or self.title, profile=self.profile, verdict=verdict.name,
            requirements=self._rows(), failures=self._failures(),
            stats={"seed": 0, "strict": self.strict, "seconds": round(self.seconds, 3),
                   "calls": 0, "steps": 0, "examples": 0, "rows": "obligation",
                   "prove": {"result": self.result, "method": self.method,
                             "bounds": self.bounds, "budget_seconds": b.seconds,
                             "workers": b.workers, "iterations": b.iterations}},
            api=self.api, notes=[f"prove: {self.method}",
                                 *(f"bounds: {line}" for line in self.bounds)],
            errors=self._errors(), verdict_reason=verdict.reason,
        )

    def _row(self, r: ObligationResult, broken: list[str]) -> check_report.RequirementStatus:
        title = f"{r.name}({r.bound})" if r.bound else r.name
        if broken:
            status, reason = check_report.FAIL, f"counterexample: {', '.join(sorted(broken))}"
        elif r.status == CONFIRMED:
            status, reason = check_report.PASS, "every path explored within the bounds"
        elif r.status == COUNTEREXAMPLE:
            status, reason = check_report.NOT_TESTED, "CrossHair's counterexample did not replay"
        else:
            status, reason = check_report.NOT_TESTED, _WORDS.get(r.status, r.status)
        checks = r.values if r.status == CONFIRMED else 0
        return check_report.RequirementStatus(obligation_id(r.name), "MUST", self.profile,
                                              title, status, checks, reason)

    def _summary(self) -> str:
        confirmed = [r.name for r in self.results if r.status == CONFIRMED]
        open_ = [r.name for r in self.results if r.status == NOT_CONFIRMED]
        failed = sorted({f.requirement for f in self.confirmed_findings})
        result = self.result
        if result == "counterexample":
            head = f"result:  COUNTEREXAMPLE, breaks {', '.join(failed)}"
        elif result == "interrupted":
            head = "result:  interrupted before every obligation reported"
        elif result == "error":
            head = "result:  could not run every obligation (see ERROR above)"
        elif result == "stopped":
            head = "result:  the deadline stopped the run before every obligation reported"
        elif result == "proved":
            head = "result:  PROVED within the bounds above: CrossHair explored every path"
        else:
            head = "result:  no counterexample within the budget; this is evidence, not a proof"
        parts = [head]
        if confirmed:
            parts.append(f"         holds on every path within the bounds: {', '.join(confirmed)}")
        if open_:
            parts.append(f"         not established (paths left unexplored): {', '.join(open_)}")
        verdict = self.judged
        parts.append(f"verdict: {verdict.name.upper()}"
                     + (f" ({verdict.reason})" if verdict.reason else ""))
        return "\n".join(parts)
