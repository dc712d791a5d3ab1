"""What a ``prove`` run established, in words that do not overclaim.

"Confirmed over all paths" is the only outcome reported as proved, and only
within the stated bounds; "not confirmed" is reported as no counterexample
within the budget; every counterexample comes with its story and a pytest
test.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from policyspec.prove.crosshair_run import (
    CONFIRMED,
    COUNTEREXAMPLE,
    ERROR,
    NOT_CONFIRMED,
    STOPPED,
    Budget,
)
from policyspec.prove.findings import Finding

__all__ = ["ObligationResult", "ProofReport"]

_WORDS = {
    CONFIRMED: "confirmed over all paths",
    NOT_CONFIRMED: "no counterexample within budget (not every path explored)",
    COUNTEREXAMPLE: "COUNTEREXAMPLE",
    ERROR: "ERROR: CrossHair could not analyse it",
    STOPPED: "stopped at the deadline: nothing established",
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


@dataclass
class ProofReport:
    title: str
    method: str
    bounds: list[str]
    budget: Budget
    results: list[ObligationResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def confirmed_findings(self) -> list[Finding]:
        return [f for f in self.findings if f.reproduced]

    @property
    def verdict(self) -> str:
        """``counterexample``, ``error``, ``proved`` (every obligation
        confirmed over all paths) or ``no counterexample``."""
        if self.confirmed_findings:
            return "counterexample"
        if any(r.status in (ERROR, STOPPED) for r in self.results):
            return "error"
        if self.results and all(r.status == CONFIRMED for r in self.results):
            return "proved"
        return "no counterexample"

    @property
    def exit_code(self) -> int:
        """0 no counterexample, 1 a counterexample, 2 could not run."""
        return {"counterexample": 1, "error": 2}.get(self.verdict, 0)

    def to_text(self) -> str:
        b = self.budget
        out = [
            f"policyspec prove: {self.title}",
            f"method:  {self.method}",
            *(f"bounds:  {line}" for line in self.bounds),
            f"budget:  {b.seconds:g} s target, {b.workers} CrossHair processes at a time; "
            f"{b.per_condition:.1f} CPU s per condition at first, more for later ones "
            f"when earlier ones end early; deadline {b.deadline:.0f} s",
            "",
        ]
        width = max((len(r.name) for r in self.results), default=10)
        for r in self.results:
            words = _WORDS.get(r.status, r.status)
            if r.status == NOT_CONFIRMED and r.confirmed:
                words += f"; {r.confirmed} of {r.conditions} conditions confirmed"
            out.append(f"  {r.name:<{width}}  {words}  [{r.seconds:.0f} s; "
                       f"{r.share:.0f} CPU s per condition]")
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
        lines = [f"COUNTEREXAMPLE ({finding.obligation}): {finding.requirement}",
                 *(f"  {line}" for line in finding.lines),
                 f"  reproduced by: {finding.how}",
                 "  pytest test:",
                 "  " + "-" * 60]
        lines.extend(f"  {line}" if line else "" for line in finding.test.splitlines())
        lines.append("  " + "-" * 60)
        return lines

    def _summary(self) -> str:
        confirmed = [r.name for r in self.results if r.status == CONFIRMED]
        open_ = [r.name for r in self.results if r.status == NOT_CONFIRMED]
        failed = sorted({f.requirement for f in self.confirmed_findings})
        verdict = self.verdict
        if verdict == "counterexample":
            head = f"result:  COUNTEREXAMPLE, breaks {', '.join(failed)}"
        elif verdict == "error":
            head = "result:  could not run every obligation (see ERROR / stopped above)"
        elif verdict == "proved":
            head = "result:  PROVED within the bounds above: CrossHair explored every path"
        else:
            head = "result:  no counterexample within the budget; this is evidence, not a proof"
        parts = [head]
        if confirmed:
            parts.append(f"         holds on every path within the bounds: {', '.join(confirmed)}")
        if open_:
            parts.append(f"         not established (paths left unexplored): {', '.join(open_)}")
        return "\n".join(parts)
