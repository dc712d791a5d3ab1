"""Conformance failures: a requirement id, what happened, and the trace.

Each requirement gets its own exception subclass so that Hypothesis keeps
failures of different requirements apart while it shrinks (it tells
failures apart by exception type and origin).
"""

from __future__ import annotations

from functools import cache

from policyspec.model.actions import Action

__all__ = [
    "COSTLY",
    "Aborted",
    "CallerContractError",
    "ConformanceFailure",
    "ProcessDied",
    "failure_type",
]


COSTLY = frozenset({"API-RETURNS", "API-PROCESS-ALIVE"})
"""Failures whose every replay costs a time limit or a process: engines hand
them over as found, and only the report's route shrinks them, with a bounded
count of such replays (``findings.finish``)."""


class ConformanceFailure(AssertionError):
    """The policy broke ``requirement``; ``trace`` is the sequence of caller
    actions from a fresh policy that led there; ``answered``, for a wrong
    eviction, the keys the policy returned (a shrinker's first guess at the
    keys the fault needs)."""

    def __init__(
        self, requirement: str, message: str, trace: tuple[Action, ...] = (),
        answered: tuple[int, ...] = (),
    ) -> None:
        super().__init__(f"{requirement}: {message}")
        self.requirement = requirement
        self.message = message
        self.trace = trace
        self.answered = answered


@cache
def failure_type(requirement: str) -> type[ConformanceFailure]:
    """The exception class used for failures of ``requirement``."""
    name = "Failure_" + requirement.replace("-", "_")
    return type(name, (ConformanceFailure,), {"__module__": __name__})


class CallerContractError(Exception):
    """An engine asked for a call the caller contract forbids: a bug in
    policyspec, never in the policy under test."""


class Aborted(BaseException):
    """Stops an engine at once, past Hypothesis's shrinking, carrying the
    failure: used when replaying would be too costly (a call that hangs)."""

    def __init__(self, failure: ConformanceFailure) -> None:
        super().__init__(str(failure))
        self.failure = failure


class ProcessDied(Exception):
    """The process holding the policy ended during a call (``--isolate``):
    the policy broke API-PROCESS-ALIVE."""
