"""Running a check's engines: in turn in this process (``--jobs 1``), or on
several cores (``--jobs N``). The work is split into the parts each engine
declares, and ``--jobs`` decides only how many run at once, so the same
target, seed and budget give the same verdict whatever ``--jobs``
(spec/check.md). Workers are forked, so any subject works without pickling,
and a worker that dies is a verdict (API-PROCESS-ALIVE), never a hang.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from policyspec.engines import ENGINES, Engine, EngineContext, EngineRun, Finding
from policyspec.harness import Aborted
from policyspec.harness.sightings import Sightings, in_run
from policyspec.harness.watchdog import Watchdog
from policyspec.harness.watchdog import current as watch
from policyspec.registry import load_registry
from policyspec.subject import Subject
from policyspec.vllm.standins.gaps import raise_if_gap

__all__ = ["Item", "available_cores", "copy_seed", "forks", "plan", "run_items"]


def available_cores() -> int:
    """The cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def copy_seed(seed: int, copy: int) -> int:
    """Part (or shard copy) 0 keeps the run's seed; part j > 0 gets one of
    its own."""
    return seed if copy == 0 else seed * 1_000_003 + copy


@dataclass(frozen=True)
class Item:
    """One engine run of a plan: which part, how much work (``run.budget``
    units), with what seed and which part of the search space."""

    engine: str
    copy: int
    units: float
    seed: int
    shard: tuple[int, int]


def plan(
    chosen: Sequence[Engine], units: float, seed: int, shard: tuple[int, int], jobs: int,
    seed_of: Callable[[int, tuple[int, int]], int], subject: Subject | None = None,
) -> list[Item]:
    """The engine runs of a check: ``units`` of work split by the engines'
    shares, each engine's share by its parts (spec/check.md), the same for
    every ``jobs`` but the exhaustive engine's shards. ``seed_of(seed,
    shard)`` is the seed of a non-shardable engine. With ``jobs`` > 1, the
    first part of an engine that leads for one of ``subject``'s capabilities
    (``Engine.leads_for``) starts at once on a worker of its own, beside the
    quick finders on the others."""
    total = sum(e.share for e in chosen) or 1.0
    leads = {e.name for e in chosen
             if e.leads_for is not None and subject is not None and subject.has(e.leads_for)}
    items: list[Item] = []
    for engine in chosen:
        share = units * engine.share / total
        base = seed if engine.shardable else seed_of(seed, shard)
        if jobs > 1 and engine.shardable:
            index, count = shard
            items += [Item(engine.name, j, share, seed, ((index - 1) * jobs + j + 1, count * jobs))
                      for j in range(jobs)]
        else:
            parts = max(1, engine.parts)
            items += [Item(engine.name, j, share / parts, copy_seed(base, j), shard)
                      for j in range(parts)]
    # The engines with the smallest share first: the fast engine sees most
    # faults early, and --fail-fast then spares the rest; the parts of one
    # engine stay side by side, so workers stay balanced.
    return sorted(items, key=lambda item: (
        not (jobs > 1 and item.engine in leads and item.copy == 0),
        ENGINES[item.engine].share, item.copy))


Build = Callable[[Item], EngineContext]
Progress = Callable[[str], None]


def forks(jobs: int, items: Sequence[Item]) -> bool:
    """Whether ``run_items`` will fork workers (it runs in turn otherwise)."""
    return (jobs > 1 and len(items) > 1
            and "fork" in multiprocessing.get_all_start_methods())


def run_items(
    items: Sequence[Item], build: Build, *, jobs: int, fail_fast: bool, started: float,
    call_timeout: float, say: Progress, done: list[EngineRun],
) -> list[EngineRun]:
    """Every item's run (copies of one engine merged), in the order of the
    engines: on ``jobs`` forked workers when ``forks``, else in turn in this
    process, whose watchdog and sightings the caller has set. ``done``
    collects the raw runs as they end, so an interrupted caller keeps them."""
    if forks(jobs, items):
        done.extend(_forked(items, build, jobs, fail_fast, started, call_timeout, say))
    else:
        for run in _in_turn(items, build, fail_fast, say):
            done.append(run)
    return _merged(items, done)


def _in_turn(
    items: Sequence[Item], build: Build, fail_fast: bool, say: Progress,
) -> Iterator[EngineRun]:
    """``--jobs 1``: each engine in turn in this process."""
    for item in items:
        say(f"{item.engine}: running (part {item.copy + 1}, {item.units:.1f} work units)")
        run = _run(item, build)
        yield run
        say(f"{item.engine}: {run.calls} calls, {run.steps} steps, "
            f"{len(run.findings)} finding(s) in {run.seconds:.1f}s")
        if fail_fast and _must(run):
            say("fail-fast: a MUST failure was found; the other engines do not run")
            return


def _run(item: Item, build: Build) -> EngineRun:
    engine = ENGINES[item.engine]
    before = watch.expired
    try:
        run = engine.run(build(item))
    except Aborted as aborted:
        run = EngineRun(engine=engine.name)
        failure = aborted.failure
        run.add(Finding(failure.requirement, failure.message, failure.trace, engine.name))
    except Exception as exc:  # a checker bug must not pass as a verdict
        raise_if_gap(exc)  # an engine that let policyspec's own gap through
        run = EngineRun(engine=engine.name, error=f"{type(exc).__name__}: {exc}")
    if watch.expired > before:
        run.counts["time_limits"] = watch.expired - before
    return run


def _must(run: EngineRun) -> bool:
    registry = load_registry()
    return any(registry[f.requirement].level == "MUST" for f in run.findings
               if f.requirement in registry)


# -- forked workers -----------------------------------------------------------

_WORK: dict[str, Any] = {}
"""What a forked worker reads (set before the pool forks, read only there)."""


def _worker(index: int) -> EngineRun:
    items: Sequence[Item] = _WORK["items"]
    stop = _WORK["stop"]
    if stop.is_set():
        return EngineRun(engine=items[index].engine, notes=["stopped before it ran (fail-fast)"])
    sightings = Sightings(_WORK["started"], stop=stop.is_set)
    with in_run(sightings), Watchdog(_WORK["call_timeout"]):
        run = _run(items[index], _WORK["build"])
    if _must(run) and _WORK["fail_fast"]:
        stop.set()
    return run


def _forked(
    items: Sequence[Item], build: Build, jobs: int, fail_fast: bool, started: float,
    call_timeout: float, say: Progress,
) -> list[EngineRun]:
    context = multiprocessing.get_context("fork")
    stop = context.Event()
    _WORK.update(items=items, build=build, stop=stop, started=started,
                 call_timeout=call_timeout, fail_fast=fail_fast)
    runs: list[EngineRun | None] = [None] * len(items)
    order = range(len(items))  # the plan's order: the quickest finders first
    say(f"{len(items)} engine runs on {jobs} worker processes")
    try:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
            pending: dict[Future[EngineRun], int] = {pool.submit(_worker, i): i for i in order}
            try:
                _collect(pending, items, runs, stop, fail_fast, say)
            except KeyboardInterrupt:
                # End now, with what ran: the workers stop at their next
                # example, the runs not started are dropped.
                stop.set()
                pool.shutdown(wait=True, cancel_futures=True)
                raise
    finally:
        _WORK.clear()
    return [run if run is not None else EngineRun(engine=items[i].engine, notes=[
        "stopped before it ran (fail-fast)"]) for i, run in enumerate(runs)]


def _collect(
    pending: dict[Future[EngineRun], int], items: Sequence[Item], runs: list[EngineRun | None],
    stop: Any, fail_fast: bool, say: Progress,
) -> None:
    """Take each worker's run as it ends; with ``fail_fast``, a MUST failure
    stops the rest."""
    while pending:
        done, _ = wait(pending, return_when=FIRST_COMPLETED)
        for future in done:
            index = pending.pop(future)
            runs[index] = run = _outcome(future, items[index])
            say(f"{run.engine} (copy {items[index].copy}): {run.calls} calls, "
                f"{len(run.findings)} finding(s) in {run.seconds:.1f}s")
            if fail_fast and _must(run):
                stop.set()
                for other in pending:
                    other.cancel()


def _outcome(future: Future[EngineRun], item: Item) -> EngineRun:
    """A worker's run, or the verdict on a worker that died."""
    if future.cancelled():
        return EngineRun(engine=item.engine, notes=["stopped before it ran (fail-fast)"])
    try:
        return future.result()
    except BrokenProcessPool:
        run = EngineRun(engine=item.engine)
        run.add(Finding(
            "API-PROCESS-ALIVE",
            f"the worker process running the {item.engine} engine ended during a policy "
            "call (the policy ended or crashed its process); rerun with --isolate --jobs 1 "
            "for the call and the trace that did it",
            (), item.engine, shrunk=True))
        return run


# -- merging the copies of one engine -------------------------------------------------


def _merged(items: Sequence[Item], runs: Sequence[EngineRun]) -> list[EngineRun]:
    """One run per engine, in the order engines first appear in ``items``."""
    by_engine: dict[str, list[tuple[int, EngineRun]]] = {}
    for item, run in zip(items, runs, strict=False):
        by_engine.setdefault(item.engine, []).append((item.copy, run))
    return [_merge(sorted(copies, key=lambda c: c[0])) for copies in by_engine.values()]


def _merge(copies: list[tuple[int, EngineRun]]) -> EngineRun:
    if len(copies) == 1:
        return copies[0][1]
    first = copies[0][1]
    merged = EngineRun(engine=first.engine)
    for _, run in copies:
        for finding in run.findings:
            if all(f.requirement != finding.requirement for f in merged.findings):
                merged.findings.append(finding)  # the lowest copy's, whatever the timing
        merged.checked.update(run.checked)
        merged.calls += run.calls
        merged.steps += run.steps
        merged.examples += run.examples
        merged.seconds = max(merged.seconds, run.seconds)
        merged.not_applicable.update(run.not_applicable)
        merged.notes.extend(n for n in run.notes if n not in merged.notes)
        merged.details.extend(n for n in run.details if n not in merged.details)
        merged.error = merged.error or run.error
        for name, value in run.counts.items():
            if name.startswith(("mean_", "largest_")) or name in ("states",):
                merged.counts[name] = max(merged.counts.get(name, value), value)
            else:
                merged.counts[name] = merged.counts.get(name, 0) + value
    merged.counts["copies"] = len(copies)  # run_details says it, once per engine
    merged.planned = sum(run.planned for _, run in copies)
    merged.capped = any(run.capped for _, run in copies)
    return merged
