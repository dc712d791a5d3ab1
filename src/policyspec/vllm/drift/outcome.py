"""What ``policyspec drift`` concludes about one vLLM: the known revision it
is (exit 0), or every difference from the nearest known one and what to do
(exit 1), as lines for the terminal and as JSON (``policyspec-drift/1``).

A fingerprint that equals a stored one whose revision policyspec cannot
drive yet (recorded, not in ``policyspec.protocols.REVISIONS``) is exit 1
too: recording a release is cheap, supporting it is not, and exit 0 must
mean that policyspec checks policies written for that vLLM.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from policyspec.exits import EXIT_CONFORMS, EXIT_FAILS, EXIT_USAGE
from policyspec.vllm.drift.compare import Difference, differences
from policyspec.vllm.drift.fingerprint import Fingerprint

__all__ = ["SCHEMA", "Drift", "judge", "unreadable_json"]

SCHEMA = "policyspec-drift/1"

KNOWN, NOT_DRIVEN, DRIFT = "known", "not-driven", "drift"


@dataclass(frozen=True)
class Drift:
    source: str
    fingerprint: Fingerprint
    nearest: Fingerprint | None
    """The stored fingerprint with the fewest differences (the newest on a
    tie); None when none is stored."""
    differences: tuple[Difference, ...]
    driven: bool
    """policyspec drives the nearest revision (it is in REVISIONS)."""

    @property
    def status(self) -> str:
        if self.nearest is None or self.differences:
            return DRIFT
        return KNOWN if self.driven else NOT_DRIVEN

    @property
    def exit_code(self) -> int:
        return EXIT_CONFORMS if self.status == KNOWN else EXIT_FAILS

    def _what(self) -> str:
        version = self.fingerprint.vllm
        shown = f"vLLM {version}" if version != "unknown" else "a vLLM of unknown version"
        return f"{shown} ({self.source})"

    def lines(self) -> list[str]:
        """The terminal output: one line when known; else a header, one line
        per difference, and what to do."""
        near = self.nearest
        if near is None:
            return [f"policyspec drift: {self._what()}: policyspec has no recorded "
                    "fingerprint to compare it with (no release folder of "
                    "policyspec/releases/ has a signature.json)"]
        recorded = "" if near.vllm == self.fingerprint.vllm else \
            f", recorded from vLLM {near.vllm}"
        if self.status == KNOWN:
            return [f"policyspec drift: {self._what()} is API revision {near.revision}"
                    f"{recorded}, which this policyspec knows"]
        if self.status == NOT_DRIVEN:
            return [
                f"policyspec drift: {self._what()} is API revision {near.revision}{recorded}, "
                f"which this policyspec has recorded but cannot drive yet ({near.revision} is "
                "not in policyspec.protocols.REVISIONS)",
                f"what to do: a policy written for this vLLM is checked against an older "
                f"revision's interface; upgrade policyspec to a release that drives "
                f"{near.revision}, and see spec/drift.md",
            ]
        count = len(self.differences)
        out = [
            f"policyspec drift: {self._what()} matches no API revision this policyspec "
            f"knows; nearest: {near.revision}{recorded} ({count} "
            f"difference{'' if count == 1 else 's'}):"
        ]
        out += [f"  {d.message}" for d in self.differences]
        out += [
            f"what to do: this policyspec checks policies against {near.revision}'s "
            "interface, not this vLLM's, so a check may miss what the lines above changed. "
            "Upgrade policyspec if a newer release knows this vLLM (policyspec drift then "
            "names its revision); otherwise send these lines to policyspec's maintainers "
            "(spec/drift.md says how a new release is followed).",
        ]
        return out

    def to_json(self) -> dict[str, Any]:
        from policyspec.version import __version__

        near = self.nearest
        return {
            "schema": SCHEMA,
            "policyspec_version": __version__,
            "source": self.source,
            "vllm": self.fingerprint.vllm,
            "status": self.status,
            "exit": self.exit_code,
            "revision": near.revision if near is not None and not self.differences else None,
            "nearest": None if near is None else {"revision": near.revision,
                                                  "vllm": near.vllm},
            "driven": self.driven,
            "differences": [
                {"area": d.area, "name": d.name, "message": d.message}
                for d in self.differences
            ],
            "fingerprint": self.fingerprint.to_json(),
            "error": None,
        }


def unreadable_json(source: str, error: str) -> dict[str, Any]:
    """The JSON of a run that could not read its vLLM (exit 2)."""
    from policyspec.version import __version__

    return {
        "schema": SCHEMA,
        "policyspec_version": __version__,
        "source": source,
        "vllm": None,
        "status": "unreadable",
        "exit": EXIT_USAGE,
        "revision": None,
        "nearest": None,
        "driven": False,
        "differences": [],
        "fingerprint": None,
        "error": error,
    }


def judge(
    fingerprint: Fingerprint,
    source: str,
    known: Sequence[Fingerprint],
    drives: Collection[str],
) -> Drift:
    """Compare ``fingerprint`` with every stored one (oldest first) and keep
    the nearest: the fewest differences, the newest on a tie."""
    best: tuple[Fingerprint, list[Difference]] | None = None
    for stored in known:
        found = differences(fingerprint, stored)
        if best is None or len(found) <= len(best[1]):
            best = (stored, found)
    if best is None:
        return Drift(source, fingerprint, None, (), False)
    stored, found = best
    return Drift(source, fingerprint, stored, tuple(found), stored.revision in drives)
