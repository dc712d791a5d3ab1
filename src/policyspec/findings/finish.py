"""The single entry point from the engines' findings to the failures a
report shows (``finish``): per requirement the shortest finding's trace (and
the shortest that vLLM's manager could make, which is preferred),
minimised with one count of replays shared out (``witness.minimise``; with
the manager's bookkeeping for its own requirements, ``manager_replay``),
moved to a smaller capacity whichever engine found it (``smaller``), the
requirement to blame (``witness.explain.culprit``, and the request level's
causes), the message its final trace gives, the snippet and the trace's
record.
"""

from __future__ import annotations

from collections.abc import Sequence

from policyspec.findings.confirm import confirmed, handed_over
from policyspec.findings.manager_replay import MANAGER_IDS, manager_fails, manager_failure
from policyspec.findings.sized import sized_witness, with_sizes
from policyspec.findings.smaller import LONG, to_smaller_capacity
from policyspec.harness import ConformanceFailure, Lockstep
from policyspec.harness.failures import COSTLY, Aborted, CallerContractError
from policyspec.harness.lockstep import THREAD_EVERY
from policyspec.harness.watchdog import Watchdog
from policyspec.model.actions import Action, by_manager, request_of
from policyspec.model.evict import eligible
from policyspec.model.state import IDLE
from policyspec.profiles import Profile
from policyspec.registry import load_registry
from policyspec.reports.report import FailureReport
from policyspec.reports.trace_record import record_actions
from policyspec.run.result import EngineRun, Finding
from policyspec.subject import Subject
from policyspec.witness.explain import placed_culprit
from policyspec.witness.minimise import bounded_witness, renumbered
from policyspec.witness.render import comparison_repro, describe, measurement_repro, repro
from policyspec.witness.reproduce import fails_with, failure_of, replayed
from policyspec.witness.reproduce import family as family_of
from policyspec.witness.shown import (
    Shown,
    in_snippet,
    show,
    snippet_limit,
    snippet_target,
    unshowable,
)
from policyspec.witness.shrink import shrink

__all__ = ["MINIMISE_TRIES", "MIN_MINIMISE_UNITS", "SIZED_CULPRIT_MOST", "finish"]


def finish(
    subject: Subject,
    profile: Profile,
    runs: Sequence[EngineRun],
    *,
    capacity: int,
    seed: int,
    watchdog: Watchdog,
    tries: int,
    cap: float | None = None,
    minimise: bool = True,
    budget: float | str = "quick",
) -> list[FailureReport]:
    """The failures of ``runs``, one per requirement, MUSTs first (module
    doc). ``tries``: the replays the minimising of all of them may make;
    ``cap``: the wall-time cap; ``minimise`` False (an interrupted run):
    the findings as the engines left them; ``budget``: the run's, for a
    snippet that re-runs an engine. Every failure's snippet is run once in
    a fresh process before it is reported (``witness.shown``)."""
    registry = load_registry()
    found: dict[str, list[Finding]] = {}
    for run in runs:
        for finding in run.findings:
            found.setdefault(finding.requirement, []).append(finding)
    chosen: list[Finding] = []
    for findings in found.values():
        # The shortest finding of each id; and when it is not a trace vLLM's
        # manager could make but an engine found one that is, the shortest
        # such too: an author believes a fault the manager can cause (not for
        # a hang or a crash: each witness shrunk costs its own time limits).
        shortest = min(findings, key=lambda f: len(f.trace))
        chosen.append(shortest)
        managed = [f for f in findings if f.trace and by_manager(f.trace)]
        if managed and not by_manager(shortest.trace) and shortest.requirement not in COSTLY:
            chosen.append(min(managed, key=lambda f: len(f.trace)))
    best: dict[str, Finding] = {}
    # The shortest trace of each id is minimised, MUSTs first, with one
    # budget of replays shared out as it goes: a finding gets its part of
    # what is left, so early ones that end quickly leave more to later ones.
    order = sorted(chosen, key=lambda f: (
        registry[f.requirement].level != "MUST" if f.requirement in registry else False,
        f.requirement))
    left = tries
    # What the engines saw break, per id a witness ends up shown under: the
    # route may name an earlier cause, but what was seen stays broken.
    saw: dict[str, set[str]] = {}
    for index, finding in enumerate(order):
        first = finding.requirement
        answered: tuple[int, ...] = ()
        if handed_over(finding):
            # The engine's exact calls, replayed on a fresh policy: what they
            # break there is the finding.
            finding, failure = confirmed(subject, profile, finding.capacity or capacity,
                                         finding)
            if failure is not None:
                answered = failure.answered
        if finding.unreproduced:
            # Not reproduced on replay: both runs stand as the engine left
            # them; nothing else is derived from a trace that passes.
            if finding.requirement not in best:
                best[finding.requirement] = finding
            continue
        if minimise:
            share, own = left // (len(order) - index), finding.replays
            finding, used = _minimise(subject, profile, capacity, finding, watchdog,
                                      share + own, cap, answered=answered)
            left -= max(0, used - own)
        saw.setdefault(finding.requirement, set()).add(first)
        old = best.get(finding.requirement)
        if old is None or old.unreproduced or _preferred(finding) < _preferred(old):
            best[finding.requirement] = finding
    failures = []
    marks = subject.has("mark")
    for rid, finding in best.items():
        known = registry.get(rid)
        level = known.level if known else "MUST"
        replay = minimise and not finding.unreproduced
        message, seen = _message_of(subject, profile, finding.capacity or capacity,
                                    finding, rid, replay=replay)
        snippet = _snippet(subject, profile, finding, rid, message, seen,
                           capacity=finding.capacity or capacity, seed=seed, budget=budget,
                           marks=marks, reference=finding.reference,
                           call_limit=watchdog.limit or None)
        shown = _show(subject, snippet, rid, watchdog.limit, len(finding.trace))
        failures.append(
            FailureReport(
                requirement=rid,
                level=level,
                title=known.title if known else rid,
                message=message,
                trace=[describe(a, marks) for a in finding.trace],
                repro=snippet,
                engine=finding.engine,
                actions=record_actions(subject, profile, finding.capacity or capacity,
                                       finding.trace, rid, replay=replay),
                found_after_s=None if finding.found_after_s is None else round(
                    finding.found_after_s, 3),
                found_after_calls=finding.found_after_calls,
                by_manager=by_manager(finding.trace),
                also_breaks=sorted(saw.get(rid, set()) - set(best)),
                capacity=(finding.capacity or capacity) if finding.trace else None,
                repro_shown=None if shown is None else shown.shown,
                repro_result="" if shown is None else shown.result,
                reproduced=not finding.unreproduced,
            )
        )
    failures.sort(key=lambda f: (f.level != "MUST", f.requirement))
    return failures


def _preferred(finding: Finding) -> tuple[bool, int]:
    """Sorts first the witness to show: one vLLM's manager could make, then
    the shortest."""
    return not by_manager(finding.trace), len(finding.trace)


def _minimise(
    subject: Subject, profile: Profile, capacity: int, finding: Finding, watchdog: Watchdog,
    tries: int, cap: float | None = None, *, answered: tuple[int, ...] = (),
) -> tuple[Finding, int]:
    """``finding`` with the witness to show (``witness.minimise.bounded_witness``),
    its message for that trace and the requirement to blame; and the replays
    the witness took, at most ``tries`` (until the wall-time ``cap``: then
    the shortest trace found so far stands, still failing, just longer).
    ``answered``: the keys the failing call of the confirming replay
    answered with (a sized witness keeps their lives first)."""
    used = 0
    costly_message: str | None = None
    trace = finding.trace
    run_capacity = capacity
    capacity = finding.capacity or capacity
    family = family_of(profile, finding.requirement)
    # A finding of the size engine was shrunk by size already: its traces
    # hold thousands of stores, which the minimiser would replay once per
    # key; it is cut down with fixed counts of its own (``sized``). (Other
    # engines' findings at a capacity of their own are small.)
    sized = finding.engine == "size"
    smaller = False  # a fresh search found a shorter witness at a smaller capacity
    if finding.reference is not None:
        pass  # a relation's two runs: its engine shrank both together
    elif finding.requirement in COSTLY:
        # Whichever engine found it: every replay that still hangs (or kills
        # the process) costs the time limit, so their count is bounded.
        with watchdog.shortened(COSTLY_LIMIT):
            trace, used, costly_message = _shrink_costly(
                subject, profile, capacity, trace, finding.requirement,
                min(COSTLY_TRIES, tries))
        if trace != finding.trace:
            # Shrunk under a lower limit: a slow call (not an endless one) may
            # pass at the run's own limit, where the snippet runs. One more
            # replay at that limit decides; without it the engine's trace stands.
            again = failure_of(subject, profile, capacity, trace, fatal=COSTLY.__contains__)
            used += 1
            if again is None or again.requirement != finding.requirement:
                trace, costly_message = finding.trace, None
    elif sized:
        trace = sized_witness(subject, profile, capacity, trace, finding.requirement,
                              answered, cap)
    elif family <= MANAGER_IDS:
        # Only the manager's bookkeeping sees these: replay with it.
        fails = manager_fails(subject, profile, capacity, family)
        trace, used = bounded_witness(trace, fails, fails, tries, cap)
    else:
        # Also after Hypothesis's own shrinking: it stops where dropping one
        # step at a time fails (a key's whole story, one key fewer to evict).
        # A long trace gets half the replays here, half at smaller
        # capacities. A trace still long after an engine's shrinking, or
        # after half the replays here, may be a fault that needs a full
        # cycle of the cache; a trace at a capacity an engine chose above
        # the run's may show in a smaller cache: every engine's findings
        # move to a smaller capacity the same way (findings.smaller).
        shrunk = finding.shrunk
        if finding.replays and not shrunk:
            # First the shrinking the engine's budget pays for, as the engine
            # itself would have done it.
            trace, spent = bounded_witness(
                trace, fails_with(subject, profile, capacity, family),
                fails_with(subject, profile, capacity, family, observe=False, threads=False),
                min(finding.replays, tries), cap)
            used, shrunk = spent, True
        long = len(trace) > LONG
        if shrunk and long:
            trace, capacity, smaller, spent = _at_smaller(subject, profile, capacity,
                                                          run_capacity, family, trace,
                                                          (tries - used) // 2, cap)
            used += spent
        if not smaller:  # (a witness at a smaller capacity is minimised already)
            trace, spent = bounded_witness(
                trace, fails_with(subject, profile, capacity, family),
                fails_with(subject, profile, capacity, family, observe=False, threads=False),
                tries - used if shrunk or not long else tries // 2, cap)
            used += spent
        if not smaller and (len(trace) > LONG or capacity > run_capacity):
            trace, capacity, smaller, spent = _at_smaller(subject, profile, capacity,
                                                          run_capacity, family, trace,
                                                          tries - used, cap)
            used += spent
    requirement, message = finding.requirement, finding.message
    if finding.requirement in COSTLY:
        # (A replay of the final trace would cost one more limit: the
        # shrinker's last failing replay worded it.)
        message = costly_message or message
    elif trace != finding.trace:
        # The message must describe the minimal trace, not the first one found.
        if family <= MANAGER_IDS:
            again = manager_failure(subject, profile, capacity, trace,
                                    fatal=family.__contains__)
        else:  # (a sized trace holds thousands of keys: no presence sweeps)
            again = failure_of(subject, profile, capacity, trace, fatal=family.__contains__,
                               observe=not sized)
        if again is not None and again.requirement in family:
            requirement, message = again.requirement, with_sizes(again.message, message)
    if len(trace) <= SIZED_CULPRIT_MOST:
        placed = placed_culprit(subject, profile, capacity, trace, requirement, cap)
        if placed.requirement != requirement and placed.step is not None:
            # Both places, so that an author can check the one the probes
            # could not tell from it (spec/arc.md, Attribution, known limits).
            message += (f" (the probes place the cause at step {placed.step + 1}, "
                         f"{describe(trace[placed.step], subject.has('mark'))}; the wrong "
                         f"result shows at step {len(trace)})")
        if placed.note:
            message += f" ({placed.note})"
        requirement = placed.requirement
    if subject.has("hooks"):
        requirement, message = _request_level_blame(
            subject, profile, capacity, trace, requirement, message)
    if smaller:
        message += (f" (shown at capacity {capacity}: at the capacity of "
                    f"{finding.capacity or run_capacity} "
                    f"every witness found was longer than {LONG} steps)")
    if capacity != (finding.capacity or run_capacity):  # moved (findings.smaller)
        shown: int | None = None if capacity == run_capacity else capacity
    else:
        shown = finding.capacity
    return Finding(requirement, message, trace, finding.engine, True, finding.found_after_s,
                   finding.found_after_calls, shown, finding.reference), used


def _shrink_costly(
    subject: Subject, profile: Profile, capacity: int, trace: tuple[Action, ...],
    requirement: str, tries: int,
) -> tuple[tuple[Action, ...], int, str | None]:
    """``trace`` shrunk while it still breaks ``requirement``, with at most
    COSTLY_REPLAYS replays that break it (each costs a time limit or a
    process; the others return at once) and ``tries`` in all; the replays
    made, and the message of the last replay of the result (None: none)."""
    spent = 0
    made = 0
    most = COSTLY_REPLAYS - 2  # the last two are for the final simplifications
    worded: dict[tuple[Action, ...], str] = {}

    def fails(candidate: Sequence[Action]) -> bool:
        nonlocal spent, made
        if spent >= most or made >= tries:
            return False  # the shortest so far stands
        made += 1
        failure = failure_of(subject, profile, capacity, candidate, fatal=COSTLY.__contains__)
        if failure is None or failure.requirement not in COSTLY:
            return False
        spent += 1
        worded[tuple(candidate)] = failure.message
        return failure.requirement == requirement

    best = trace
    # Whole-trace simplifications first, one costly replay each (no
    # protected key the trace never stores, every evict asking for one),
    # then steps dropped, then the same evicts and the keys named 0, 1, 2.
    for simpler in (_stored_protected_only, _one_evicted):
        candidate = simpler(best)
        if candidate != best and fails(candidate):
            best = candidate
    best = shrink(best, fails, max_tries=tries)
    most = COSTLY_REPLAYS
    for simpler in (_one_evicted, renumbered):
        candidate = simpler(best)
        if candidate != best and fails(candidate):
            best = candidate
    return best, made, worded.get(best)


def _stored_protected_only(trace: Sequence[Action]) -> tuple[Action, ...]:
    """``trace`` with no key in a protected set that the trace never stores."""
    stored = {a[1] for a in trace if a[0] == "insert"}
    return tuple(("evict", a[1], type(a[2])(k for k in a[2] if k in stored))
                 if a[0] == "evict" else a for a in trace)


def _one_evicted(trace: Sequence[Action]) -> tuple[Action, ...]:
    """``trace`` with every evict asking for one key."""
    return tuple(("evict", 1, a[2]) if a[0] == "evict" and a[1] > 1 else a for a in trace)


def _at_smaller(
    subject: Subject, profile: Profile, capacity: int, run_capacity: int,
    family: frozenset[str], trace: tuple[Action, ...], tries: int, cap: float | None,
) -> tuple[tuple[Action, ...], int, bool, int]:
    """``smaller.to_smaller_capacity``, or ``trace`` as it was: the trace,
    its capacity, whether a fresh search found it (a shorter witness,
    minimised already), and the replays used."""
    moved, used = to_smaller_capacity(subject, profile, trace, capacity, family,
                             run_capacity=run_capacity, tries=tries, cap=cap)
    if moved is None:
        return trace, capacity, False, used
    return moved.trace, moved.capacity, moved.searched, used


COSTLY_REPLAYS = 12
"""Replays that hang or kill the policy's process one witness's shrinking may
make (and one more at the run's own limit to confirm the result): a count,
so the time a hang costs is bounded on any machine."""
COSTLY_TRIES = 40
"""Replays in all when shrinking such a witness (the others return at once)."""
COSTLY_LIMIT = 0.5
"""The call time limit, in seconds, while a hang is shrunk."""
MIN_MINIMISE_UNITS = 3.0
MINIMISE_TRIES = 100
"""Replays policyspec's own minimising of a run's findings may make, per
work unit of the budget (at least MIN_MINIMISE_UNITS' worth): a count, not
a clock, so the same seed gives the same trace on any machine."""
SIZED_CULPRIT_MOST = 160
"""Longest trace (a sized finding's, or one minimising left long) whose
order difference ``culprit`` traces back to an operation: it replays every prefix with probes of the
whole order, cubic in the trace's length (a 260-step trace ran past two
minutes); a longer one keeps the id it was found with."""
_HOOKS = ("on_store_miss", "on_request_access", "on_request_finished", "hook")
"""The request hooks' actions (``hook``: a later release's observation hooks)."""



def _request_level_blame(
    subject: Subject, profile: Profile, capacity: int, trace: tuple[Action, ...],
    requirement: str, message: str,
) -> tuple[str, str]:
    """Name the request level's requirement when it is the cause: the same
    calls from one thread pass (API-ANY-THREAD), or the same trace without
    its hook calls passes although the failure is a core one seen elsewhere
    (HOOK-KEEPS-MEMBERSHIP: a hook changed what later calls see)."""
    # Each cause below is read off the trace's own replay, so a witness that
    # does not fail alone (a relation's two runs, the manager's bookkeeping,
    # a measurement) keeps the requirement its engine compared. A hang or a
    # crash is not: a call that takes about the time limit passes one replay
    # and fails the next, which would name threads for a slow call (and each
    # replay would cost a limit).
    if (not trace or requirement in COSTLY
            or failure_of(subject, profile, capacity, trace) is None):
        return requirement, message
    if failure_of(subject, profile, capacity, trace, threads=False) is None:
        return "API-ANY-THREAD", (
            f"the calls of the trace fail when one step in {THREAD_EVERY} comes from a second "
            f"thread, and pass from one thread ({message}); the spec requires the same behaviour "
            "whichever of the manager's threads calls")
    reset = _stale_request(subject, profile, capacity, trace, requirement)
    if reset is not None:
        return reset, (
            f"{message}; the trace passes once the requests that ran before its last clear() "
            "get fresh ids after it, so the policy used their state from before the clear, "
            "which the spec requires it to ignore")
    known = load_registry().get(requirement)
    if known is None or known.profile != "core" or requirement.startswith("HOOK-"):
        return requirement, message  # a refinement's order: hooks may move it
    if not any(a[0] in _HOOKS for a in trace):
        return requirement, message
    without = tuple(a for a in trace if a[0] not in _HOOKS)
    if failure_of(subject, profile, capacity, without) is not None:
        return requirement, message
    # The trace needs its hooks; that alone does not make a hook guilty (a
    # remove that forgets where a hook legitimately moved a key is remove's
    # fault). A hook is, when it changed eligibility itself: right before
    # it the policy holds exactly the eligible keys, right after it not.
    step = _hook_took_eligibility(subject, profile, capacity, trace)
    if step is None:
        return requirement, message
    return "HOOK-KEEPS-MEMBERSHIP", (
        f"{message}; the trace passes without its request hooks, and the hook at step "
        f"{step + 1} changed which keys the policy holds eligible (right before it, evicts "
        "reach exactly the eligible keys; right after it, they do not), which the spec "
        "forbids a hook to do")


def _hook_took_eligibility(
    subject: Subject, profile: Profile, capacity: int, trace: tuple[Action, ...],
) -> int | None:
    """The index of the first hook of ``trace`` after which the policy holds
    other keys eligible than the model does (one lost, or one gained),
    although it held exactly those right before the hook; None when no hook
    changed eligibility."""
    for index, action in enumerate(trace):
        if action[0] in _HOOKS and (
                _holds_eligible_as_modelled(subject, profile, capacity, trace[:index])
                and not _holds_eligible_as_modelled(subject, profile, capacity,
                                                    trace[:index + 1])):
            return index
    return None


def _every_id(_rid: str) -> bool:
    """Every requirement fatal: a probe's replay stops at any failure."""
    return True


def _holds_eligible_as_modelled(
    subject: Subject, profile: Profile, capacity: int, prefix: tuple[Action, ...],
) -> bool:
    """Whether, after ``prefix`` on a fresh policy, the keys the policy
    holds eligible are the model's: an evict of one more than the model's
    count is refused, and evicts of one key at a time, repeated, reach
    every eligible key and no other (True also when the prefix itself
    fails: no evidence either way). A fresh idle key is added first where
    there is room.

    Repeated single evicts beside a fresh key, not one evict of them all: a
    CLOCK that skips a chunk whose reference bit a hook set, once per lap,
    still reaches it once a lap spends the bit; a key a hook really made
    ineligible is never reached however often evict is asked, while the
    fresh key, which no hook named, is. An evict that never gives up even
    the fresh key, or a refusal that spends state, is evict's own fault
    (EVICT-LIVENESS, EVICT-ATOMIC)."""
    harness = replayed(subject, profile, capacity, prefix, fatal=_every_id, threads=False)
    if harness is None:
        return True
    want = set(eligible(harness.state, ()))
    more = replayed(subject, profile, capacity, prefix, fatal=_every_id, threads=False)
    if more is not None:
        try:
            more.apply(("evict", len(want) + 1, frozenset()))
        except (ConformanceFailure, Aborted, CallerContractError):
            return False
        if more.soft:
            return False
    fresh = _add_fresh_idle_key(harness, prefix)
    allowed = want | ({fresh} if fresh is not None else set())
    reached: set[int] = set()
    took_fresh = False
    for _ in range(2 * len(allowed) + 2):
        if reached == want:
            break
        try:
            victims = harness.probe_evict(1)
        except (Exception, Aborted):  # a raise or a hang says nothing of the hook
            return True
        for k in victims or ():
            if k not in allowed:
                return False
            if k == fresh:
                took_fresh = True
            else:
                reached.add(k)
    if reached != want and fresh is not None and not took_fresh:
        return True  # evict refuses even the fresh key no hook named: evict's own fault
    return reached == want


def _add_fresh_idle_key(harness: Lockstep, prefix: tuple[Action, ...]) -> int | None:
    """Insert and idle one key the prefix never used, where the caller
    contract allows it (room left, a request to name): the key evicts take
    first lets a policy that ranks keys by reference bits or ages spend
    them, as it would in any longer run. Its model key, or None."""
    used = [a[1] for a in prefix if a[0] == "insert"]
    fresh = max(used, default=-1) + 1
    requests = [a[3] for a in prefix if a[0] == "insert" and len(a) > 3]
    for insert in (("insert", fresh, IDLE), *(("insert", fresh, IDLE, r) for r in requests[-1:])):
        if harness.model.allows(insert):
            try:
                harness.apply(insert)
            except (ConformanceFailure, Aborted, CallerContractError):
                return None
            return fresh
    return None


def _stale_request(
    subject: Subject, profile: Profile, capacity: int, trace: tuple[Action, ...],
    requirement: str,
) -> str | None:
    """The refinement's clear requirement (LRU033-CLEAR-RESET, ...) when an
    order fault is a request's state from before the trace's last clear: the
    trace passes once every request that made a call before that clear gets
    a fresh id after it (its key positions placed again), which is how a
    policy must treat it (spec/request.md: state of an older generation is
    void). The order difference itself shows later, at a finish or an
    eviction, which ``culprit`` blames."""
    refinement = profile.refinement
    cuts = [i for i, a in enumerate(trace) if a[0] == "clear"]
    known = load_registry().get(requirement)
    if refinement is None or not cuts or known is None or known.profile != profile.name:
        return None  # (only an exact profile's own ids: its order, and what culprit blamed)
    cut = cuts[-1]

    ids = {r for r in map(request_of, trace) if r is not None}
    earlier = sorted({r for r in map(request_of, trace[:cut]) if r is not None})
    if not earlier:
        return None
    fresh = {r: max(ids) + 1 + i for i, r in enumerate(earlier)}
    placed: dict[int, dict[int, int]] = {}
    for action in trace[:cut]:
        if action[0] == "set_positions":
            placed.setdefault(action[1], {}).update(dict(action[2]))
    again = tuple(("set_positions", fresh[r], tuple(placed[r].items()))
                  for r in earlier if placed.get(r))

    def renamed(action: Action) -> Action:
        r = request_of(action)
        if r not in fresh:
            return action
        if action[0] == "insert":
            return (*action[:3], fresh[r])
        if action[0] == "hook":
            return (*action[:2], fresh[r], *action[3:])
        return (action[0], fresh[r], *action[2:])

    candidate = (*trace[:cut + 1], *again, *map(renamed, trace[cut + 1:]))
    harness = Lockstep(subject, profile, capacity)
    try:
        harness.run(candidate)
    except (ConformanceFailure, Aborted, CallerContractError):
        return None  # still failing, or outside the caller contract: no such cause
    return None if harness.soft else refinement.culprit("clear")


def _message_of(subject: Subject, profile: Profile, capacity: int, finding: Finding,
                rid: str, *, replay: bool) -> tuple[str, str | None]:
    """The failure's message as a replay of its final trace words it, so that
    it names the trace's keys (a shrinker renumbers them after the message
    was made), and the id that replay fails with (``rid`` itself, or the one
    the fault shows as when ``rid`` was blamed for it: the operation behind
    a wrong order, the hook or thread behind a core failure); the engine's
    own message and None when no replay is wanted or the trace alone does
    not show the fault (a metamorphic witness needs its relation's second
    run). A size engine's note of the sizes that show it stays. Only a
    trace that shows it alone gets a snippet that asserts it on a replay.
    (A hang costs this replay one call time limit: its message too must
    name the final trace's keys.)"""
    if not replay or not finding.trace or (rid == "API-PROCESS-ALIVE"):
        return finding.message, None  # (a process that ends is not replayed here)
    replay_ = manager_failure if rid in MANAGER_IDS else failure_of
    again = replay_(subject, profile, capacity, finding.trace,
                    fatal=family_of(profile, rid).__contains__)
    if again is None or again.requirement != rid:
        # Blamed on another operation than the one that shows it: the
        # replay shows it as the first failure it meets.
        again = replay_(subject, profile, capacity, finding.trace)
        if again is None:
            return finding.message, None
        # A blame's message quotes the replay's; an engine's message from
        # before shrinking names keys the final trace may not hold.
        text = finding.message if again.message in finding.message else again.message
        return text, again.requirement
    return with_sizes(again.message, finding.message), rid


_RAISES = frozenset({"API-NO-RAISE", "API-RETURNS", "API-PROCESS-ALIVE", "HOOK-TOTAL",
                     "TOUCH-TOTAL"})
"""Ids of a call that raises, hangs or ends the process: the snippet's
assertion comes before the calls written out, which would stop it first
(so it does for any failure whose message says a call raised: a SHOULD
such as API-CLOCK-STEP-BACK can be a raise too)."""


def _snippet(subject: Subject, profile: Profile, finding: Finding, rid: str, message: str,
             seen: str | None, *, capacity: int, seed: int, budget: float | str,
             marks: bool, reference: tuple[Action, ...] | None = None,
             call_limit: float | None = None) -> str:
    """The failure's reproducing snippet (``witness.render``): the trace's
    calls asserting ``rid`` on a replay where the trace shows it
    (``seen``); a metamorphic relation's two runs compared (``reference``);
    else the engine run again asserting it does not report it."""
    api = subject.api if subject.fits else None
    target = snippet_target(subject.name, subject.source) or subject.name
    if seen is None and reference is not None and subject.api not in ("R6", "R6-draft"):
        return comparison_repro(target, capacity, finding.trace, reference, rid, message,
                                marks, placeholders=subject.placeholders, api=api, seed=seed,
                                revision=subject.api)
    if seen is None and rid in COSTLY and finding.trace:
        seen = rid  # (not confirmed by a replay here: each costs the call time limit)
    if seen is not None:
        return repro(target, capacity, finding.trace, f"{rid}: {message}", marks,
                     placeholders=subject.placeholders, judged=(profile.name, rid),
                     api=api, seed=seed, revision=subject.api, seen=seen, message=message,
                     first=rid in _RAISES or seen in _RAISES or " raised " in message,
                     call_timeout=call_limit if rid in COSTLY or seen in COSTLY else None)
    return measurement_repro(target, profile.name, finding.engine, rid, api=api,
                             revision=subject.api, seed=seed, budget=budget, message=message,
                             placeholders=subject.placeholders)


def _show(subject: Subject, snippet: str, rid: str, call_limit: float, steps: int
          ) -> Shown | None:
    """``snippet`` run in a fresh process (``witness.shown``); None inside
    such a process, which runs no snippets of its own."""
    if in_snippet():
        return None
    why = unshowable(subject.in_child, subject.name, subject.source)
    if why is not None:
        return Shown(False, why)
    return show(snippet, rid, snippet_limit(call_limit, steps))

