"""The committed verdicts on mutants that survive ``policyspec check``.

``mutation_equivalent.toml`` lists mutants that behave like the original for
every call the caller contract allows (with the reason, and the CrossHair
command that proved it where one did); ``mutation_missing_checks.toml``
lists mutants a sharper check would kill, naming the check. A mutant is
identified by its file, the function it sits in, cosmic-ray's operator and
the line before and after the change, so entries survive edits elsewhere
in the file.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["EQUIVALENT", "MISSING", "Ledger", "MutantId", "Verdict", "load_ledger"]

HERE = Path(__file__).resolve().parent
EQUIVALENT = HERE / "mutation_equivalent.toml"
MISSING = HERE / "mutation_missing_checks.toml"


@dataclass(frozen=True)
class MutantId:
    file: str
    definition: str
    operator: str
    before: str
    after: str

    def short(self) -> str:
        return f"{self.file} {self.definition}: {self.operator}: `{self.before}` -> `{self.after}`"


@dataclass(frozen=True)
class Verdict:
    kind: str
    """equivalent, missing-check or unclassified."""
    note: str
    proved: bool = False
    """CrossHair's diffbehavior exhausted every path inside the preconditions."""


@dataclass(frozen=True)
class Ledger:
    equivalent: dict[MutantId, tuple[str, str]]
    """mutant -> (reason, proof command or "")."""
    missing: dict[MutantId, str]
    """mutant -> the check that would kill it."""

    def classify(self, mutant: MutantId) -> Verdict:
        if mutant in self.equivalent:
            reason, proof = self.equivalent[mutant]
            note = f"{reason} [proved: {proof}]" if proof else reason
            return Verdict("equivalent", note, bool(proof))
        if mutant in self.missing:
            return Verdict("missing-check", f"missing check: {self.missing[mutant]}")
        return Verdict("unclassified", "not in the ledger: a new survivor to classify")


def _entries(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with path.open("rb") as handle:
        entries: list[dict[str, str]] = tomllib.load(handle).get("mutant", [])
    return entries


def _id(entry: dict[str, str]) -> MutantId:
    return MutantId(entry["file"], entry["definition"], entry["operator"], entry["before"],
                    entry["after"])


def load_ledger() -> Ledger:
    return Ledger(
        {_id(e): (e["reason"], e.get("proved", "")) for e in _entries(EQUIVALENT)},
        {_id(e): e["check"] for e in _entries(MISSING)},
    )
