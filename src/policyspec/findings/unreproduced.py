"""A finding an engine saw whose calls, replayed on a fresh policy, do not
break the requirement: true non-determinism, or a bug in policyspec. It is
never a verdict on the policy and never lost: the route reports it with
both runs' results beside the engine's error (spec/check.md)."""

from __future__ import annotations

from collections.abc import Sequence

from policyspec.harness import Aborted, CallerContractError, ConformanceFailure
from policyspec.model.actions import Action
from policyspec.profiles import Profile
from policyspec.run.result import Finding
from policyspec.subject import Subject
from policyspec.witness.render import describe
from policyspec.witness.reproduce import replayed

__all__ = ["not_reproduced"]


def not_reproduced(
    subject: Subject, profile: Profile, capacity: int, trace: Sequence[Action],
    requirement: str, message: str, engine: str, *, shown: int | None = None,
) -> Finding:
    """The finding of ``engine``, which saw ``requirement`` broken
    (``message``) after ``trace``, when a replay of the same calls passes;
    ``shown``: the capacity it ran at, when not the run's."""
    again = _replayed_last(subject, profile, capacity, trace)
    text = (f"{message} (seen by the {engine} engine); replayed on a fresh policy, the same "
            f"{len(trace)} caller actions break nothing{again}: not reproduced, so not "
            "judged (a non-deterministic policy, or a bug in policyspec)")
    return Finding(requirement, text, tuple(trace), engine, shrunk=True, capacity=shown,
                   unreproduced=f"the replay breaks nothing{again}")


def _replayed_last(subject: Subject, profile: Profile, capacity: int,
                   trace: Sequence[Action]) -> str:
    """What the last action gave on the replay, as ``", and <action> gave
    <result>"``; "" when the replay cannot say."""
    if not trace:
        return ""
    harness = replayed(subject, profile, capacity, trace[:-1], fatal=lambda _rid: False,
                       threads=False)
    if harness is None:
        return ""
    try:
        result = harness.apply(trace[-1])
    except (ConformanceFailure, Aborted, CallerContractError):
        return ""
    shown = repr(result)
    if len(shown) > 120:
        shown = shown[:117] + "..."
    return f", and its last, {describe(trace[-1], subject.has('mark'))}, gave {shown}"
