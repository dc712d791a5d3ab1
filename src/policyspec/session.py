"""The one run set-up every front end shares: ``policyspec check``, the
pytest plugin and ``ConformanceSuite`` all end in ``run_check`` (through
``check_target`` when they start from a target), so they give the same
verdict. It owns what lasts for the whole run: the vLLM stand-ins (a policy
may import ``vllm`` inside a method), the call watchdog, isolation, the
Hypothesis database and the budget's shares; engines get all of it in one
``EngineContext``.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace

from policyspec.adapters import TargetError, installed, load_subject, subject_for_class
from policyspec.engines import ENGINES, EngineContext, EngineRun, Finding
from policyspec.engines.explain import culprit
from policyspec.engines.manager_replay import MANAGER_IDS, manager_fails, manager_failure
from policyspec.engines.minimise import bounded_witness
from policyspec.engines.render import describe, repro
from policyspec.engines.reproduce import fails_with, failure_of
from policyspec.engines.shrink import shrink
from policyspec.engines.smaller import LONG, smaller_witness
from policyspec.exits import UsageError
from policyspec.harness import ConformanceFailure, Lockstep
from policyspec.harness.failures import Aborted, CallerContractError
from policyspec.harness.lockstep import unobservable
from policyspec.harness.sightings import Sightings, in_run
from policyspec.harness.watchdog import Watchdog
from policyspec.model.actions import REQUEST_ACTIONS, Action, by_manager
from policyspec.profiles import Profile, get_profile
from policyspec.registry import load_registry, requirements_for
from policyspec.report import (
    FAIL,
    NA,
    NOT_TESTED,
    PASS,
    FailureReport,
    Report,
    RequirementStatus,
)
from policyspec.subject import Subject
from policyspec.trace_record import record_actions
from policyspec.workers import Item, available_cores, forks, plan, run_items

__all__ = [
    "BUDGETS",
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_CAPACITY",
    "SIZED_CULPRIT_MOST",
    "Budget",
    "CheckOptions",
    "check_target",
    "report_findings",
    "run_check",
    "shard_seed",
]

DEFAULT_CAPACITY = 64
DEFAULT_CALL_TIMEOUT = 10.0
"""Seconds one policy call may take before it is reported (API-RETURNS)."""


@dataclass(frozen=True)
class Budget:
    name: str
    seconds: float
    """Wall-clock seconds the engines share (the run adds a little on top)."""


BUDGETS = {
    "quick": Budget("quick", 15.0),
    "standard": Budget("standard", 50.0),
    "deep": Budget("deep", 240.0),
}


@dataclass(frozen=True)
class CheckOptions:
    """How to run a check: what every front end maps its options onto."""

    budget: str | float = "standard"
    seed: int = 0
    strict: bool = False
    engines: tuple[str, ...] | None = None
    """Engines to run by name; None: every default engine."""
    capacity: int = DEFAULT_CAPACITY
    capacity_fixed: bool = False
    """``capacity`` was chosen (``--capacity``): engines that draw sizes
    keep to it instead of drawing capacities of their own."""
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    shard: tuple[int, int] = (1, 1)
    hypothesis_db: str | None = None
    """A directory for Hypothesis's example database: failures found once
    are replayed first next time (cache it in CI). None: no database."""
    depth: int | None = None
    keys: int | None = None
    symmetry: bool = True
    """The exhaustive engine's bounds (None: its defaults)."""
    jobs: int | None = None
    """Worker processes (policyspec.workers); None: the cores this process
    may use; 1: every engine in turn in this process."""
    fail_fast: bool = False
    """The first MUST failure stops the other engines and workers."""
    isolate: bool = False
    memory_limit_mb: int = 4096
    api: str | None = None
    stand_in: bool = True

    def validate(self) -> None:
        """UsageError, in one line, for options that cannot go together."""
        if isinstance(self.budget, str) and self.budget not in BUDGETS:
            raise UsageError(f"unknown budget {self.budget!r} (choose from: "
                             f"{', '.join(BUDGETS)}, or seconds)")
        if self.capacity < 1:
            raise UsageError("--capacity must be at least 1")
        unknown = [e for e in self.engines or () if e not in ENGINES]
        if unknown:
            raise UsageError(f"unknown engine {unknown[0]!r} (choose from: "
                             f"{', '.join(sorted(ENGINES))})")
        tuned = self.depth is not None or self.keys is not None or not self.symmetry
        if tuned and "exhaustive" not in (self.engines or ()):
            raise UsageError("--depth, --keys and --no-symmetry tune the exhaustive engine: "
                             "add --engine exhaustive")
        if self.depth == 0 or self.keys == 0:
            raise UsageError("--depth and --keys must be at least 1")
        if self.jobs is not None and self.jobs < 1:
            raise UsageError("--jobs must be at least 1")
        index, total = self.shard
        if not 1 <= index <= total:
            raise UsageError(f"--shard {index}/{total}: expected K/N with 1 <= K <= N")


def check_target(
    target: str | type,
    profile: str | Profile,
    options: CheckOptions = CheckOptions(),
    *,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Load ``target`` (``pkg.module:Class``, ``path/to/file.py:Class`` or a
    class) and check it. TargetError for a target that cannot be loaded,
    UsageError for bad options or an unknown profile."""
    options.validate()
    try:
        chosen = get_profile(profile) if isinstance(profile, str) else profile
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if isinstance(target, str):
        subject = load_subject(target, stand_in=options.stand_in, api=options.api)
    else:
        if options.isolate:
            raise UsageError("isolation needs a target the child process can import "
                             "(pkg.module:Class or file.py:Class), not a class object")
        subject = subject_for_class(target, api=options.api)
    with _isolated(target, subject, options) as isolated:
        return run_check(isolated, chosen, options=options, progress=progress)


@contextlib.contextmanager
def _isolated(target: str | type, subject: Subject, options: CheckOptions) -> Iterator[Subject]:
    """``subject``, or with ``isolate`` the same target served by a child
    process under a memory limit (closed when the run ends)."""
    if not options.isolate or not isinstance(target, str):
        yield subject
        return
    from policyspec.lineproto import ChildError
    from policyspec.lineproto.isolate import IsolatedTarget

    limit = options.call_timeout + 2.0 if options.call_timeout > 0 else 3600.0
    try:
        child = IsolatedTarget(target, api=options.api, stand_in=options.stand_in,
                               memory_limit_mb=options.memory_limit_mb, timeout=limit)
    except ChildError as exc:
        raise TargetError(f"--isolate: the child process did not start: {exc}") from None
    try:
        yield child.isolated_subject(subject)
    finally:
        child.close()


def run_check(
    subject: Subject,
    profile: Profile,
    *,
    options: CheckOptions | None = None,
    progress: Callable[[str], None] | None = None,
    budget: str | float | None = None,
    seed: int | None = None,
    strict: bool | None = None,
    engines: Iterable[str] | None = None,
    capacity: int | None = None,
    call_timeout: float | None = None,
    shard: tuple[int, int] | None = None,
) -> Report:
    """Check ``subject`` against ``profile`` and return the report. The
    keywords override ``options`` one by one (library use). Engines run in
    turn, each for its share of the budget; the first MUST failure found by
    one engine does not stop the others (they look for more).
    ``shard=(k, n)`` runs the k-th of n deterministic parts of the work:
    engines marked ``shardable`` split their search space by it, the others
    run with the seed ``shard_seed(seed, shard)``."""
    options = options or CheckOptions(jobs=1)  # library use: in turn unless asked
    options = replace(
        options,
        budget=options.budget if budget is None else budget,
        seed=options.seed if seed is None else seed,
        strict=options.strict if strict is None else strict,
        engines=options.engines if engines is None else tuple(engines),
        capacity=options.capacity if capacity is None else capacity,
        capacity_fixed=options.capacity_fixed or capacity is not None,
        call_timeout=options.call_timeout if call_timeout is None else call_timeout,
        shard=options.shard if shard is None else shard,
    )
    options.validate()
    say = progress or (lambda _msg: None)
    budget_ = options.budget
    seconds = budget_ if isinstance(budget_, int | float) else BUDGETS[budget_].seconds
    chosen = [ENGINES[e] for e in options.engines] if options.engines else [
        e for e in ENGINES.values() if e.default
    ]
    chosen = [e for e in chosen if e.applies(profile)]
    # An engine for a capability the subject lacks gets no share of the
    # budget (it would make no call): the report says why it did not run.
    unserved = [e for e in chosen if e.needs is not None and not subject.has(e.needs)]
    chosen = [e for e in chosen if e not in unserved]
    if options.engines and not chosen:
        # A run of no engine would report PASS having made no call.
        raise UsageError(
            "--engine: none of the chosen engines can check this policy: " + "; ".join(
                f"{name} needs the policy's {ENGINES[name].needs!r} capability (API "
                f"{subject.api})" if ENGINES[name] in unserved
                else f"{name} runs only under a profile that includes "
                f"{ENGINES[name].only_for!r} (not {profile.name!r})"
                for name in options.engines))
    started = time.monotonic()
    interrupted = False
    database = None
    if options.hypothesis_db:
        from hypothesis.database import DirectoryBasedExampleDatabase

        database = DirectoryBasedExampleDatabase(options.hypothesis_db)
    standins = installed() if subject.stand_in else contextlib.nullcontext(None)
    jobs = options.jobs or available_cores()
    items = plan(chosen, seconds, options.seed, options.shard, jobs, shard_seed,
                 lead="stateful" if subject.has("hooks") else None)

    def build(item: Item) -> EngineContext:
        return EngineContext(
            subject, profile, item.seconds, item.seed, options.capacity, item.shard, database,
            options.depth, options.keys, options.symmetry, options.capacity_fixed,
        )

    sightings = Sightings(started)
    done: list[EngineRun] = []
    with standins, in_run(sightings):
        # Workers fork before this process starts its watchdog thread.
        forked = forks(jobs, items)
        with contextlib.nullcontext() if forked else Watchdog(options.call_timeout) as clock:
            try:
                runs = run_items(items, build, jobs=jobs, fail_fast=options.fail_fast,
                                 started=started, call_timeout=options.call_timeout, say=say,
                                 done=done)
            except KeyboardInterrupt:
                interrupted = True
                runs = done
                say("interrupted: reporting what ran so far")
        with Watchdog(options.call_timeout) as watchdog:
            report = _report(
                subject, profile, runs, options.seed, options.strict, options.capacity,
                time.monotonic() - started, minimise=not interrupted, watchdog=watchdog,
                minimise_tries=round(max(MIN_MINIMISE_SECONDS, seconds) * MINIMISE_TRIES),
                minimise_until=started + max(MINIMISE_BY * seconds,
                                             seconds + MIN_MINIMISE_SECONDS),
                blame_seconds=BLAME_SHARE * seconds,
            )
    report.notes.extend(
        f"{e.name}: not run: the policy lacks the {e.needs!r} capability it drives "
        f"(API {subject.api})" for e in unserved)
    enforced = watchdog.enforced and (clock is None or clock.enforced)
    report.stats["jobs"] = jobs
    shard_ = options.shard
    if shard_ != (1, 1):
        report.stats["shard"] = f"{shard_[0]}/{shard_[1]}"
    if not enforced and options.call_timeout > 0:
        report.notes.append("the call time limit was not enforced (not on the main thread)")
    if interrupted:
        report.verdict = "interrupted"
        report.notes.append("interrupted before the end: engines that ran: "
                            + (", ".join(r.engine for r in runs) or "none"))
    return report


def report_findings(
    subject: Subject, profile: Profile, run: EngineRun, *, capacity: int, seconds: float,
    seed: int = 0, strict: bool = False,
) -> Report:
    """The report ``run_check`` makes of one engine's run, its findings
    minimised and blamed within the same budgets of replays and time as a
    check of ``seconds``: for a front end that finds faults its own way
    (``policyspec prove``), so that they are shown as check shows them."""
    started = time.monotonic()
    standins = installed() if subject.stand_in else contextlib.nullcontext(None)
    with standins, Watchdog(DEFAULT_CALL_TIMEOUT) as watchdog:
        return _report(
            subject, profile, [run], seed, strict, capacity, seconds, watchdog=watchdog,
            minimise_tries=round(max(MIN_MINIMISE_SECONDS, seconds) * MINIMISE_TRIES),
            minimise_until=started + max(MINIMISE_BY * seconds, seconds + MIN_MINIMISE_SECONDS),
            blame_seconds=BLAME_SHARE * seconds,
        )


def shard_seed(seed: int, shard: tuple[int, int]) -> int:
    """The seed shard K of N gives the engines that are not ``shardable``
    (random and Hypothesis engines): ``seed * N + K - 1``. Shards of one
    campaign get distinct seeds, hence different examples; ``1/1`` keeps the
    seed itself; the same seed and shard always give the same run."""
    index, total = shard
    return seed * total + index - 1


def _minimise(
    subject: Subject, profile: Profile, capacity: int, finding: Finding, watchdog: Watchdog,
    tries: int, deadline: float | None = None, blame_until: float | None = None,
) -> tuple[Finding, int]:
    """``finding`` with the witness to show (``engines.minimise.bounded_witness``),
    its message for that trace and the requirement to blame; and the replays
    the witness took, at most ``tries`` and until ``deadline`` (then the
    shortest trace found so far stands: still failing, just longer).
    ``culprit`` looks for the operation to blame until ``blame_until``."""
    used = 0
    trace = finding.trace
    run_capacity = capacity
    capacity = finding.capacity or capacity
    family = _family(profile, finding.requirement)
    # A finding of the size engine was shrunk by size already: its traces
    # hold thousands of stores, which the minimiser would replay once per
    # key. (Other engines' findings at a capacity of their own are small.)
    sized = finding.engine == "size"
    smaller = False  # the witness was found again at a smaller capacity (engines.smaller)
    if not sized and not finding.shrunk and finding.requirement in _COSTLY:
        # Every replay that still hangs costs the time limit: lower it and
        # try few candidates.
        with watchdog.shortened(0.5):
            trace = shrink(trace, fails_with(subject, profile, capacity, finding.requirement),
                           max_tries=min(40, tries))
            used = min(40, tries)
    elif not sized and family <= MANAGER_IDS:
        # Only the manager's bookkeeping sees these: replay with it.
        fails = manager_fails(subject, profile, capacity, family)
        trace, used = bounded_witness(trace, fails, fails, tries, deadline)
    elif not sized and finding.requirement not in _COSTLY:
        # Also after Hypothesis's own shrinking: it stops where dropping one
        # step at a time fails (a key's whole story, one key fewer to evict).
        # A long trace gets half the time here, half at smaller capacities.
        # A trace still long after an engine's shrinking, or after half the
        # time here, may be a fault that needs a full cycle of the cache:
        # look for it at smaller capacities (engines.smaller).
        now = time.monotonic()
        half = None if deadline is None or len(trace) <= LONG else now + (deadline - now) / 2
        if finding.shrunk and len(trace) > LONG:
            trace, capacity, smaller, used = _at_smaller(subject, profile, capacity, family,
                                                         trace, tries, half)
        if not smaller:  # (a witness at a smaller capacity is minimised already)
            trace, spent = bounded_witness(
                trace, fails_with(subject, profile, capacity, family),
                fails_with(subject, profile, capacity, family, observe=False, threads=False),
                tries - used, deadline if finding.shrunk else half or deadline)
            used += spent
        if not smaller and len(trace) > LONG:
            trace, capacity, smaller, spent = _at_smaller(subject, profile, capacity, family,
                                                          trace, tries - used, deadline)
            used += spent
    requirement, message = finding.requirement, finding.message
    if trace != finding.trace:
        # The message must describe the minimal trace, not the first one found.
        again = (manager_failure if family <= MANAGER_IDS else failure_of)(
            subject, profile, capacity, trace, fatal=family.__contains__)
        if again is not None and again.requirement in family:
            requirement, message = again.requirement, again.message
    if len(trace) <= SIZED_CULPRIT_MOST:
        # (At least MIN_BLAME_SECONDS: a short trace's culprit is quick, and
        # the deadline is there for long ones.)
        until = None if blame_until is None else max(
            blame_until, time.monotonic() + MIN_BLAME_SECONDS)
        requirement = culprit(subject, profile, capacity, trace, requirement, until)
    if subject.has("hooks"):
        requirement, message = _request_level_blame(
            subject, profile, capacity, trace, requirement, message)
    if smaller:
        message += (f" (shown at capacity {capacity}: at the capacity of "
                    f"{finding.capacity or run_capacity} "
                    f"every witness found was longer than {LONG} steps)")
    return Finding(requirement, message, trace, finding.engine, True, finding.found_after_s,
                   finding.found_after_calls, capacity if smaller else finding.capacity), used


def _at_smaller(
    subject: Subject, profile: Profile, capacity: int, family: frozenset[str],
    trace: tuple[Action, ...], tries: int, deadline: float | None,
) -> tuple[tuple[Action, ...], int, bool, int]:
    """``smaller_witness``, or ``trace`` as it was: the trace, its capacity,
    whether it is a smaller capacity's witness, and the replays used."""
    smaller = smaller_witness(subject, profile, capacity, family, len(trace), tries, deadline)
    if smaller is None:
        return trace, capacity, False, 0
    return smaller[0], smaller[1], True, smaller[2]


_COSTLY = ("API-RETURNS", "API-PROCESS-ALIVE")
MIN_MINIMISE_SECONDS = 3.0
MINIMISE_TRIES = 100
"""Replays policyspec's own minimising of a run's findings may make, per
second of the budget (at least MIN_MINIMISE_SECONDS): a failing quick run
stays under 30 s wall, and being a count, not a clock, the same seed gives
the same trace however busy the machine."""
MINIMISE_BY = 1.5
"""Minimising ends by this many times the budget's seconds after the run
started (at least MIN_MINIMISE_SECONDS after the budget; each finding at
least MIN_MINIMISE_EACH seconds), whatever is left of
the count: on a machine too busy for MINIMISE_TRIES replays in that time the
budget still holds (quick under 30 s wall, standard under 90 s), with a
longer trace."""
MIN_MINIMISE_EACH = 0.5
MIN_BLAME_SECONDS = 1.0
BLAME_SHARE = 0.2
"""``culprit``'s search for the operation to blame ends this many times the
budget's seconds after minimising (quick: 3 s): past it, a finding keeps
the id it was found with."""
SIZED_CULPRIT_MOST = 160
"""Longest trace (a sized finding's, or one minimising left long) whose
order difference ``culprit`` traces back to an operation: it replays every prefix with probes of the
whole order, cubic in the trace's length (a 260-step trace ran past two
minutes); a longer one keeps the id it was found with."""
_HOOKS = ("on_store_miss", "on_request_access", "on_request_finished")


def _request_level_blame(
    subject: Subject, profile: Profile, capacity: int, trace: tuple[Action, ...],
    requirement: str, message: str,
) -> tuple[str, str]:
    """Name the request level's requirement when it is the cause: the same
    calls from one thread pass (API-ANY-THREAD), or the same trace without
    its hook calls passes although the failure is a core one seen elsewhere
    (HOOK-KEEPS-MEMBERSHIP: a hook changed what later calls see)."""
    # (Only a trace can be replayed from one thread: a finding without one,
    # such as evict-linear's timing, says nothing about threads.)
    if trace and failure_of(subject, profile, capacity, trace, threads=False) is None:
        return "API-ANY-THREAD", (
            f"the calls of the trace fail when every other step comes from a second thread, "
            f"and pass from one thread ({message}); the spec requires the same behaviour "
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
    hooks = [i for i, a in enumerate(trace) if a[0] in _HOOKS]
    if not hooks:
        return requirement, message
    without = tuple(a for a in trace if a[0] not in _HOOKS)
    if failure_of(subject, profile, capacity, without) is None:
        step = hooks[-1] + 1
        return "HOOK-KEEPS-MEMBERSHIP", (
            f"{message}; the trace passes without its request hooks, so the hook at step "
            f"{step} changed what later calls see, which the spec forbids a hook to do")
    return requirement, message


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

    def request_of(action: Action) -> int | None:
        if action[0] in REQUEST_ACTIONS:
            return int(action[1])
        return int(action[3]) if action[0] == "insert" and len(action) > 3 else None

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
        return (action[0], fresh[r], *action[2:])

    candidate = (*trace[:cut + 1], *again, *map(renamed, trace[cut + 1:]))
    harness = Lockstep(subject, profile, capacity)
    try:
        harness.run(candidate)
    except (ConformanceFailure, Aborted, CallerContractError):
        return None  # still failing, or outside the caller contract: no such cause
    return None if harness.soft else refinement.culprit("clear")



def _family(profile: Profile, requirement: str) -> frozenset[str]:
    """The ids a shrunk trace may fail with and still show the same fault: a
    refinement's wrong victims and its needless refusal are both a wrong
    order, and ``culprit`` names the operation behind either."""
    refinement = profile.refinement
    if refinement is not None:
        family = frozenset((refinement.order_requirement, refinement.liveness_requirement))
        if requirement in family:
            return family
    return frozenset((requirement,))


def _report(
    subject: Subject,
    profile: Profile,
    runs: list[EngineRun],
    seed: int,
    strict: bool,
    capacity: int,
    seconds: float,
    *,
    minimise: bool = True,
    watchdog: Watchdog,
    minimise_tries: int = 0,
    minimise_until: float | None = None,
    blame_seconds: float = 0.0,
) -> Report:
    registry = load_registry()
    checked: Counter[str] = Counter()
    not_applicable: dict[str, str] = {}
    unseen = unobservable(subject)
    errors = [f"{r.engine}: {r.error}" for r in runs if r.error]
    found: dict[str, Finding] = {}
    for run in runs:
        checked.update(run.checked)
        not_applicable.update(run.not_applicable)
        for finding in run.findings:
            old = found.get(finding.requirement)
            if old is None or len(finding.trace) < len(old.trace):
                found[finding.requirement] = finding
    best: dict[str, Finding] = {}
    # The shortest trace of each id is minimised, MUSTs first, with one
    # budget of replays shared out as it goes: a finding gets its part of
    # what is left, so early ones that end quickly leave more to later ones.
    order = sorted(found.values(), key=lambda f: (
        registry[f.requirement].level != "MUST" if f.requirement in registry else False,
        f.requirement))
    left = minimise_tries
    for index, finding in enumerate(order):
        if minimise:
            until = blame = None
            if minimise_until is not None:
                now = time.monotonic()
                until = now + max(MIN_MINIMISE_EACH,
                                  (minimise_until - now) / (len(order) - index))
                blame = minimise_until + blame_seconds
            finding, used = _minimise(subject, profile, capacity, finding, watchdog,
                                      left // (len(order) - index), until, blame)
            left -= used
        old = best.get(finding.requirement)
        if old is None or len(finding.trace) < len(old.trace):
            best[finding.requirement] = finding
    statuses: list[RequirementStatus] = []
    for req in requirements_for(profile.includes):
        missing = [need for need in req.needs if not subject.has(need)]
        if req.id in best:
            status, reason = FAIL, ""
        elif missing:
            status, reason = NA, f"the policy has no {', '.join(missing)}"
        elif req.id in not_applicable:
            status, reason = NA, not_applicable[req.id]
        elif checked[req.id] > 0:
            status, reason = PASS, ""
        else:
            status, reason = NOT_TESTED, unseen.get(req.id, "no engine exercised it")
        statuses.append(
            RequirementStatus(req.id, req.level, req.profile, req.title, status,
                              checked[req.id], reason)
        )
    failures = []
    marks = subject.has("mark")
    for rid, finding in best.items():
        known = registry.get(rid)
        failures.append(
            FailureReport(
                requirement=rid,
                level=known.level if known else "MUST",
                title=known.title if known else rid,
                message=finding.message,
                trace=[describe(a, marks) for a in finding.trace],
                repro=repro(subject.name, finding.capacity or capacity, finding.trace,
                            f"{rid}: {finding.message}", marks),
                engine=finding.engine,
                actions=record_actions(subject, profile, finding.capacity or capacity,
                                       finding.trace, rid, replay=minimise),
                found_after_s=None if finding.found_after_s is None else round(
                    finding.found_after_s, 3),
                found_after_calls=finding.found_after_calls,
                by_manager=by_manager(finding.trace),
            )
        )
    failures.sort(key=lambda f: (f.level != "MUST", f.requirement))
    failing_levels = {f.level for f in failures}
    if errors:
        verdict = "error"
    elif "MUST" in failing_levels or (strict and "SHOULD" in failing_levels):
        verdict = "fail"
    else:
        verdict = "pass"
    notes = list(subject.notes)
    for run in runs:
        notes.extend(f"{run.engine}: {n}" for n in run.notes)
    stats = {
        "seed": seed,
        "strict": strict,
        "seconds": round(seconds, 3),
        "calls": sum(r.calls for r in runs),
        "steps": sum(r.steps for r in runs),
        "examples": sum(r.examples for r in runs),
        "capacity": capacity,
        "engines": {
            r.engine: {"calls": r.calls, "steps": r.steps, "examples": r.examples,
                       "seconds": round(r.seconds, 3), **r.counts}
            for r in runs
        },
    }
    return Report(
        target=subject.name,
        profile=profile.name,
        verdict=verdict,
        requirements=statuses,
        failures=failures,
        stats=stats,
        api=subject.api,
        notes=notes,
        errors=errors,
    )
