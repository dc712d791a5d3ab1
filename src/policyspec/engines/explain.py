"""Naming the right requirement for an order difference.

An exact profile notices a wrong order only when an eviction returns other
victims than the refinement. The operation that really went wrong may have
come much earlier (a touch that walked the wrong way, a mark that did not
refresh recency). ``culprit`` replays each prefix of the minimal trace on a
fresh policy and asks it for its whole eviction order (evict every eligible
key); the first prefix whose order differs from the refinement's names the
culprit operation. A failure that disappears when the harness stops
observing through ``get`` is a side effect of get (GET-PURE).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from policyspec.engines.replay import failure_of
from policyspec.harness import Aborted, CallerContractError, ConformanceFailure, Lockstep
from policyspec.model.actions import Action
from policyspec.model.evict import eligible
from policyspec.profiles import Profile
from policyspec.subject import Subject

__all__ = ["culprit"]


def culprit(
    subject: Subject, profile: Profile, capacity: int, trace: Sequence[Action], requirement: str
) -> str:
    """The requirement to report for a failure first seen as ``requirement``."""
    refinement = profile.refinement
    if refinement is None or requirement not in (
        refinement.order_requirement,
        refinement.liveness_requirement,
    ):
        return requirement
    if failure_of(subject, profile, capacity, trace, observe=False) is None:
        return "GET-PURE"
    for end in range(1, len(trace)):
        harness = Lockstep(subject, profile, capacity, observe=False)
        try:
            harness.run(trace[:end])
        except (ConformanceFailure, CallerContractError, Aborted):
            return requirement
        if _order_differs(harness):
            return _culprit_of(trace[end - 1], refinement.culprit)
    return requirement


def _order_differs(harness: Lockstep) -> bool:
    """Evict every eligible key from the harness's policy and compare the
    order with the refinement's (the harness is spent afterwards)."""
    refinement = harness.refinement
    assert refinement is not None
    count = len(eligible(harness.state, ()))
    if count == 0:
        return False
    _, expected = refinement.evict(harness.ext, harness.state, count, ())
    try:
        got = harness.policy.evict(count, set())
    except Exception:
        return True
    if got is None or expected is None:
        return got is not expected
    return [harness.model_key(k) for k, _ in got] != expected


# The policy call an action ends with (end_read ends with mark_evictable
# when the last reader leaves, the only case that can move the order).
_LAST_CALL = {
    "insert": "insert",
    "finish_store": "mark_evictable",
    "end_read": "mark_evictable",
    "start_read": "mark_non_evictable",
    "remove": "remove",
    "touch": "touch",
    "evict": "evict",
    "clear": "clear",
}


def _culprit_of(action: Action, name_for: Callable[[str], str]) -> str:
    if action[0] == "get":
        return "GET-PURE"
    return name_for(_LAST_CALL[action[0]])
