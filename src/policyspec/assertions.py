"""What a failure's reproducing snippet ends with: the requirement asserted
on a replay of its trace, so that the snippet, saved as a test, fails with
the requirement's message against the faulty policy and passes against a
fixed one.

The replay is the check's own: a fresh policy driven through the trace in
lockstep with the profile's model (``witness.reproduce``), with the
manager's bookkeeping for the manager's requirements (``engines.manager_replay``).
"""

from __future__ import annotations

from collections.abc import Sequence

from policyspec.findings.manager_replay import MANAGER_IDS, manager_failure
from policyspec.model.actions import Action
from policyspec.profiles import Profile, get_profile
from policyspec.subject import Subject
from policyspec.witness.reproduce import failure_of

__all__ = ["assert_requirement_holds", "family"]


def family(profile: Profile, requirement: str) -> frozenset[str]:
    """The ids that show the same fault as ``requirement``: an exact
    profile's wrong victims and its needless refusal are one wrong order."""
    refinement = profile.refinement
    if refinement is not None:
        both = frozenset((refinement.order_requirement, refinement.liveness_requirement))
        if requirement in both:
            return both
    return frozenset((requirement,))


def assert_requirement_holds(
    subject: Subject, profile: str, capacity: int, trace: Sequence[Action], requirement: str,
) -> None:
    """AssertionError ``"ID: message"`` when replaying ``trace`` on a fresh
    policy of ``subject`` (built with ``capacity``) breaks ``requirement``
    under ``profile``; nothing when the policy meets it there."""
    chosen = get_profile(profile)
    ids = family(chosen, requirement)
    replay = manager_failure if requirement in MANAGER_IDS else failure_of
    failure = replay(subject, chosen, capacity, tuple(trace), fatal=ids.__contains__)
    if failure is not None and failure.requirement in ids:
        raise AssertionError(f"{failure.requirement}: {failure.message}")
