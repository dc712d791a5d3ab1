"""The route's first step (spec/check.md, "Which requirement a failure
names"): an engine hands over the exact calls it made, with what it saw,
and the route replays them on a fresh policy in lockstep with the model.
What the replay breaks, not the engine's reading of its own run, names the
requirement and words the message; calls whose replay breaks nothing are
kept as an unreproduced finding with both runs (``unreproduced``), never
lost and never a verdict on the policy.
"""

from __future__ import annotations

from dataclasses import replace

from policyspec.findings.manager_replay import MANAGER_IDS, manager_failure
from policyspec.findings.sized import with_sizes
from policyspec.findings.unreproduced import not_reproduced
from policyspec.harness import ConformanceFailure
from policyspec.harness.failures import COSTLY
from policyspec.profiles import Profile
from policyspec.registry import load_registry
from policyspec.run.result import Finding
from policyspec.subject import Subject
from policyspec.witness.reproduce import failure_of

__all__ = ["OBSERVED_MOST", "confirmed", "handed_over"]

OBSERVED_MOST = 2_000
"""Longest trace replayed with presence sweeps (a ``get`` of every key after
each step): the sweeps cost a replay of the thousands of keys a long or
sized run names, so a longer trace is replayed without them only."""


def handed_over(finding: Finding) -> bool:
    """Whether ``finding`` holds an engine's calls as made, for ``confirmed``
    to replay: not shrunk by its engine, with a trace that fails alone (no
    relation's second run), not a hang or a crash (each replay would cost a
    time limit or a process; the route bounds how many it makes) and not
    already an unreproduced one."""
    return (not finding.shrunk and bool(finding.trace) and finding.reference is None
            and finding.requirement not in COSTLY and not finding.unreproduced)


def confirmed(
    subject: Subject, profile: Profile, capacity: int, finding: Finding,
) -> tuple[Finding, ConformanceFailure | None]:
    """``finding`` as a replay of its calls at ``capacity`` shows it: the
    replay's requirement, message (with a size engine's note of the sizes
    that show it) and failing prefix, and the replay's failure; or the
    unreproduced finding and None. A SHOULD is replayed with only itself
    fatal, so that it is not hidden behind the MUST it may cause; an id
    only the manager's bookkeeping checks is replayed with it, alone fatal
    too (the manager engine runs past the policy's own failures to reach
    its bookkeeping's). The
    replay sweeps presence first (a fault the sweeps see shows earlier),
    then not (a fault a sweep's ``get`` would hide), up to OBSERVED_MOST
    actions."""
    trace, wanted = finding.trace, finding.requirement
    fatal = None
    known = load_registry().get(wanted)
    if (known is not None and known.level != "MUST") or wanted in MANAGER_IDS:
        fatal = lambda rid: rid == wanted  # noqa: E731
    failure = None
    if wanted in MANAGER_IDS:
        # Only the manager's bookkeeping sees these: replayed with it.
        failure = manager_failure(subject, profile, capacity, trace, fatal=fatal)
    else:
        if len(trace) <= OBSERVED_MOST:
            failure = failure_of(subject, profile, capacity, trace, fatal=fatal)
        if failure is None:
            failure = failure_of(subject, profile, capacity, trace, fatal=fatal, observe=False)
    if failure is None:
        return not_reproduced(subject, profile, capacity, trace, wanted, finding.message,
                              finding.engine, shown=finding.capacity), None
    return replace(finding, requirement=failure.requirement,
                   message=with_sizes(failure.message, finding.message),
                   trace=tuple(failure.trace)), failure
