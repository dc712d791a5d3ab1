"""What an engine run produces: findings in requirement ids, and counts."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from policyspec.harness.sightings import current
from policyspec.model.actions import Action

__all__ = ["Comparison", "EngineRun", "Finding"]


@dataclass(frozen=True)
class Comparison:
    """A relation's witness (the metamorphic engine): the trace passes on its
    own, but some of its results must equal those of a second run of
    ``baseline`` on a fresh policy: ``pairs`` holds (trace step, baseline
    step), from 0. ``change`` says in words what the trace adds."""

    baseline: tuple[Action, ...]
    pairs: tuple[tuple[int, int], ...]
    change: str


@dataclass
class Finding:
    """One requirement broken, with the shortest trace found that shows it."""

    requirement: str
    message: str
    trace: tuple[Action, ...]
    engine: str
    shrunk: bool = False
    """True when the engine already minimised the trace."""
    found_after_s: float | None = None
    found_after_calls: int | None = None
    """When the run first saw this requirement fail (``harness.sightings``);
    set by ``EngineRun.add`` when the engine did not."""
    capacity: int | None = None
    """The cache capacity the trace runs at, when the engine chose its own
    (the size engine); None: the run's capacity."""
    reference: tuple[Action, ...] | None = None
    """A metamorphic relation's second run, up to the step whose result the
    trace's last step must give: the trace alone breaks nothing, the two
    runs disagree. None for every other finding."""
    replays: int = 0
    """Replays the route may spend minimising this finding beyond its share
    of the run's own: the shrinking an engine hands over with its calls is
    paid from that engine's budget (``findings.finish``)."""
    unreproduced: str = ""
    """Set when the same calls, replayed on a fresh policy, did not break
    the requirement: what the replay gave. Such a finding is both runs'
    record beside the engine's error (a non-deterministic policy, or a bug
    in policyspec), never a verdict on the policy."""


@dataclass
class EngineRun:
    """The outcome of one engine on one subject."""

    engine: str
    findings: list[Finding] = field(default_factory=list)
    checked: Counter[str] = field(default_factory=Counter)
    calls: int = 0
    steps: int = 0
    examples: int = 0
    seconds: float = 0.0
    not_applicable: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    """Notes shown only with ``-v``: what the run did (sizes drawn, states
    reached), as against what its verdict depends on (``notes``)."""
    error: str | None = None
    """Set when the engine itself could not run to the end (not the policy's fault)."""
    planned: int = 0
    """The examples (scenarios, sessions, runs) its budget gave it."""
    capped: bool = False
    """The wall-time cap (``--time-limit``) stopped it before ``planned``."""
    counts: dict[str, int] = field(default_factory=dict)
    """Engine-specific counts for the report's stats (e.g. the exhaustive
    engine's sequences and distinct model states)."""

    def add(self, finding: Finding) -> None:
        """Keep the first (shortest, for shrunk engines) finding per requirement,
        stamped with when the run first saw it."""
        if finding.found_after_s is None:
            sightings = current()
            sightings.saw(finding.requirement)  # a no-op when seen before
            seen = sightings.first.get(finding.requirement)  # None outside a run
            if seen is not None:
                finding.found_after_s, finding.found_after_calls = seen
        for index, old in enumerate(self.findings):
            if old.requirement == finding.requirement:
                if len(finding.trace) < len(old.trace):
                    self.findings[index] = finding
                return
        self.findings.append(finding)
