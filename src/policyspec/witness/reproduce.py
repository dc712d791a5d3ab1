"""Replaying a trace on a fresh policy in lockstep, for shrinking and for
confirming a finding."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from policyspec.harness import Aborted, CallerContractError, ConformanceFailure, Lockstep
from policyspec.model.actions import Action
from policyspec.profiles import Profile
from policyspec.subject import Subject

__all__ = ["fails_with", "failure_of", "family", "replayed"]


def failure_of(
    subject: Subject,
    profile: Profile,
    capacity: int,
    trace: Sequence[Action],
    *,
    observe: bool = True,
    fatal: Callable[[str], bool] | None = None,
    threads: bool | None = None,
) -> ConformanceFailure | None:
    """The failure replaying ``trace`` raises (soft ones count too), or None.
    A trace the caller contract forbids gives None. ``threads``: the
    harness's second thread (default: where the revision has hooks)."""
    harness = Lockstep(subject, profile, capacity, observe=observe, fatal=fatal,
                       threads=threads)
    try:
        harness.run(trace)
    except ConformanceFailure as failure:
        return failure
    except Aborted as aborted:
        return aborted.failure
    except CallerContractError:
        return None
    return harness.soft[0] if harness.soft else None


def replayed(
    subject: Subject,
    profile: Profile,
    capacity: int,
    prefix: Sequence[Action],
    *,
    fatal: Callable[[str], bool] | None = None,
    threads: bool | None = None,
) -> Lockstep | None:
    """A fresh policy's harness that ran ``prefix`` (no presence sweep), to
    probe or step on from there; None when the prefix itself fails or the
    caller contract forbids it. ``fatal`` and ``threads`` as for
    ``failure_of``."""
    harness = Lockstep(subject, profile, capacity, observe=False, fatal=fatal,
                       threads=threads)
    try:
        harness.run(prefix)
    except (ConformanceFailure, CallerContractError, Aborted):
        return None
    return harness


def fails_with(
    subject: Subject,
    profile: Profile,
    capacity: int,
    requirement: str | frozenset[str],
    *,
    observe: bool = True,
    threads: bool | None = None,
) -> Callable[[Sequence[Action]], bool]:
    """A predicate for the shrinker: the trace still breaks ``requirement``
    (or one of a set of ids that show the same fault). ``threads`` as for
    ``failure_of``."""
    family = frozenset((requirement,)) if isinstance(requirement, str) else requirement

    def fails(trace: Sequence[Action]) -> bool:
        failure = failure_of(
            subject, profile, capacity, trace, observe=observe, fatal=family.__contains__,
            threads=threads,
        )
        return failure is not None and failure.requirement in family

    return fails


def family(profile: Profile, requirement: str) -> frozenset[str]:
    """The ids a trace may fail with and still show the same fault as
    ``requirement``: an exact profile's wrong victims and its needless
    refusal are one wrong order (``culprit`` names the operation behind
    either)."""
    refinement = profile.refinement
    if refinement is not None:
        both = frozenset((refinement.order_requirement, refinement.liveness_requirement))
        if requirement in both:
            return both
    return frozenset((requirement,))
