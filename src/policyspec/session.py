"""The one run set-up every front end shares: ``policyspec check``, the
pytest plugin and ``ConformanceSuite`` all end in ``run_check`` (through
``check_target`` when they start from a target), so they give the same
verdict. It owns what lasts for the whole run: the vLLM stand-ins (a policy
may import ``vllm`` inside a method), the policy's virtual clock and random
seed (``policyspec.environment``), the call watchdog, isolation, the
Hypothesis database and the budget's shares; engines get all of it in one
``EngineContext``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace

from policyspec.adapters import TargetError, installed, load_subject, subject_for_class
from policyspec.engines import ENGINES, EngineContext, EngineRun
from policyspec.environment import controlled
from policyspec.exits import UsageError
from policyspec.findings.finish import MIN_MINIMISE_UNITS, MINIMISE_TRIES, finish
from policyspec.harness.sightings import Sightings, in_run
from policyspec.harness.watchdog import Watchdog
from policyspec.harness.watchdog import current as watch
from policyspec.options import DEFAULT_CALL_TIMEOUT, CheckOptions
from policyspec.profiles import Profile, get_profile
from policyspec.reports.build import assemble
from policyspec.reports.report import Report
from policyspec.reports.run_details import run_details
from policyspec.run.budget import units_of
from policyspec.run.context import EngineOptions
from policyspec.subject import Subject
from policyspec.workers import Item, available_cores, forks, plan, run_items

__all__ = ["check_target", "report_findings", "run_check", "shard_seed"]


def check_target(
    target: str | type,
    profile: str | Profile,
    options: CheckOptions | None = None,
    *,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Load ``target`` (``pkg.module:Class``, ``path/to/file.py:Class`` or a
    class) and check it. TargetError for a target that cannot be loaded,
    UsageError for bad options or an unknown profile."""
    options = options or CheckOptions()
    options.validate()
    try:
        chosen = get_profile(profile) if isinstance(profile, str) else profile
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if isinstance(target, str):
        subject = load_subject(target, stand_in=options.stand_in, api=options.api,
                               placeholders=options.placeholders)
    else:
        if options.isolate:
            raise UsageError("isolation needs a target the child process can import "
                             "(pkg.module:Class or file.py:Class), not a class object")
        subject = subject_for_class(target, api=options.api)
    subject = subject.fitted(chosen.api)  # before --isolate hands the revision on
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
    from policyspec.lineproto.child import CHILD_GRACE
    from policyspec.lineproto.isolate import IsolatedTarget

    limit = options.call_timeout + CHILD_GRACE if options.call_timeout > 0 else 3600.0
    try:
        # The revision this process chose (a policy may fit two: the child
        # must drive it as the same one).
        child = IsolatedTarget(target, api=subject.api, stand_in=options.stand_in,
                               memory_limit_mb=options.memory_limit_mb, timeout=limit,
                               placeholders=options.placeholders)
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
    subject = subject.fitted(profile.api)
    say = progress or (lambda _msg: None)
    units = units_of(options.budget) * subject.work_scale
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
    cap = None if options.time_limit is None else started + options.time_limit
    interrupted = False
    database = None
    if options.hypothesis_db:
        from hypothesis.database import DirectoryBasedExampleDatabase

        database = DirectoryBasedExampleDatabase(options.hypothesis_db)
    standins = installed() if subject.stand_in else contextlib.nullcontext(None)
    jobs = options.jobs or available_cores()
    items = plan(chosen, units, options.seed, options.shard, jobs, shard_seed, subject)

    engine_options = EngineOptions(depth=options.depth, keys=options.keys,
                                   symmetry=options.symmetry, trace=options.trace)

    def build(item: Item) -> EngineContext:
        return EngineContext(
            subject, profile, item.units, item.seed, options.capacity, item.shard, database,
            options.capacity_fixed, cap, engine_options,
        )

    sightings = Sightings(started)
    done: list[EngineRun] = []
    with standins, in_run(sightings), controlled(options.seed):
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
            expired = watch.expired
            failures = finish(
                subject, profile, runs, capacity=options.capacity, seed=options.seed,
                watchdog=watchdog, cap=cap, minimise=not interrupted,
                tries=round(max(MIN_MINIMISE_UNITS, units) * MINIMISE_TRIES),
                budget=options.budget)
            report = assemble(subject, profile, runs, failures, seed=options.seed,
                              strict=options.strict, capacity=options.capacity,
                              seconds=time.monotonic() - started, cap=cap,
                              interrupted=interrupted)
            # Calls ended at the time limit, by the engines and by the route:
            # what hangs cost the run, as a count (spec/check.md).
            report.stats["time_limits"] = watch.expired - expired + sum(
                r.counts.get("time_limits", 0) for r in runs)
    if subject.work_scale != 1:
        report.notes.append(
            f"every policy call crosses a pipe: the budget's {units_of(options.budget):g} work "
            f"units are scaled by {subject.work_scale:g} to {units:g} (spec/check.md, Budgets)")
    report.notes.extend(
        f"{e.name}: not run: the policy lacks the {e.needs!r} capability it drives "
        f"(API {subject.api})" for e in unserved)
    report.details.extend(
        f"{run.engine}: {line}" for run in runs
        for line in run_details(run, options.capacity, options.capacity_fixed))
    enforced = watchdog.enforced and (clock is None or clock.enforced)
    report.stats["jobs"] = jobs
    shard_ = options.shard
    if shard_ != (1, 1):
        report.stats["shard"] = f"{shard_[0]}/{shard_[1]}"
    if not enforced and options.call_timeout > 0:
        report.notes.append("the call time limit was not enforced (not on the main thread)")
    if interrupted:
        report.notes.append("interrupted before the end: engines that ran: "
                            + (", ".join(r.engine for r in runs) or "none"))
    return report


def report_findings(
    subject: Subject, profile: Profile, run: EngineRun, *, capacity: int, units: float,
    seed: int = 0, strict: bool = False,
) -> Report:
    """The report ``run_check`` makes of one engine's run, its findings
    minimised and blamed with the count of replays a check of ``units``
    work units has: for a front end that finds faults its own way
    (``policyspec prove``), so that they are shown as check shows them."""
    started = time.monotonic()
    standins = installed() if subject.stand_in else contextlib.nullcontext(None)
    with standins, Watchdog(DEFAULT_CALL_TIMEOUT) as watchdog:
        failures = finish(subject, profile, [run], capacity=capacity, seed=seed,
                          watchdog=watchdog, budget=units,
                          tries=round(max(MIN_MINIMISE_UNITS, units) * MINIMISE_TRIES))
        return assemble(subject, profile, [run], failures, seed=seed, strict=strict,
                        capacity=capacity, seconds=time.monotonic() - started)


def shard_seed(seed: int, shard: tuple[int, int]) -> int:
    """The seed shard K of N gives the engines that are not ``shardable``
    (random and Hypothesis engines): ``seed * N + K - 1``. Shards of one
    campaign get distinct seeds, hence different examples; ``1/1`` keeps the
    seed itself; the same seed and shard always give the same run."""
    index, total = shard
    return seed * total + index - 1


