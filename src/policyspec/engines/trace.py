"""Serving traces as an engine (spec/traffic.md, "The trace engine"): a
trace's requests played on the emulated manager of the policy's revision,
every call checked in lockstep against the profile's model, so that a
policy is judged on the traffic it will serve. Its work is a count of
requests the budget buys, never a clock; a failure is replayed and shrunk
from a checkpoint of the model, so a long play still gives a short finding.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from time import monotonic
from typing import Any

from policyspec.engines.vllm_manager import (
    THRESHOLD,
    AuditedManager,
    EmulationMismatch,
    ManagerCheckFailed,
    ManagerProxy,
    TrafficContext,
    manager_requirement,
    without_lookups,
)
from policyspec.harness import Aborted, ConformanceFailure, Lockstep
from policyspec.harness.sightings import current as current_sightings
from policyspec.harness.watchdog import CallTimeout
from policyspec.model.actions import Action
from policyspec.model.request import Requests
from policyspec.model.state import IDLE, IN_FLIGHT, State
from policyspec.profiles import Profile
from policyspec.registry import load_registry
from policyspec.run.context import Engine, EngineContext
from policyspec.run.result import EngineRun, Finding
from policyspec.subject import Subject
from policyspec.vllm.manager import ManagerAssertionError, release_for
from policyspec.witness.minimise import bounded_witness
from policyspec.witness.reproduce import fails_with, failure_of
from policyspec.workload.player import PlayCounts, Player, Timing, manager_class
from policyspec.workload.reader import TraceRequest, read_trace
from policyspec.workload.sample import sample_path

__all__ = [
    "CHECKPOINT_ACTIONS",
    "ENGINE",
    "ENGINES",
    "EXAMPLE_REQUESTS",
    "KEEP",
    "REQUESTS_PER_UNIT",
    "TraceProxy",
    "Windows",
    "run_trace",
    "setup_actions",
]

ENGINE = "trace"
EXAMPLE_REQUESTS = 40
"""Requests of one example of the sample."""
REQUESTS_PER_UNIT = 60
"""Requests of the sample a work unit of the engine's share buys (run.budget;
calibrated in benchmarks/results.txt, budgets): the same budget plays the
same requests on any machine. At least one example."""
SIZES = (16, 48)
"""Cache sizes the sample's examples cycle through beside the run's own
(unless it was chosen): its requests name 11 blocks on average, so these
fill within a few requests."""
CHECKPOINT_ACTIONS = 256
KEEP = 4
"""Checkpoints kept: a window is at most ``KEEP * CHECKPOINT_ACTIONS``
actions (and at least one checkpoint's worth) before the failing call."""
OBSERVE_EVERY = 4
"""Every this many examples the harness also sweeps presence after every
call and the manager is audited after every call (``vllm-manager``'s)."""
SHRINK_TRIES = 1000
"""Replays the engine shrinks one finding with (the report's minimiser
goes on from the result)."""


def setup_actions(state: State) -> tuple[Action, ...]:
    """Caller actions that bring a fresh policy to the model's ``state``:
    every present key stored (idle ones first, in their order), the idle
    ones completed in their order, the ones being read completed and
    pinned as often as they are read. What a policy keeps beyond that
    state (ranks, ghosts, counts) starts afresh."""
    idle = list(state.idle)
    waiting = set(idle)
    others = [k for k in state.refs if k not in waiting]
    actions: list[Action] = [("insert", k, IN_FLIGHT) for k in idle + others]
    actions += [("finish_store", k) for k in idle]
    for k in others:
        reads = state.refs[k]
        if reads > IDLE:
            actions.append(("finish_store", k))
            actions += [("start_read", k)] * reads
    return tuple(actions)


class Windows:
    """The checkpoints of one play (spec/traffic.md, "The trace engine") over ``harness.trace``,
    whose front is cut as checkpoints age (``trim``)."""

    def __init__(self, harness: Lockstep, *, every: int = CHECKPOINT_ACTIONS, keep: int = KEEP,
                 trim: bool = True) -> None:
        self.h = harness
        self.every = every
        self.trim = trim
        self.marks: deque[tuple[int, Any]] = deque(maxlen=keep)
        """(actions before the checkpoint, the model there)."""
        self.cut = 0
        """Actions cut from the front of ``harness.trace``."""

    @property
    def actions(self) -> int:
        return self.cut + len(self.h.trace)

    def due(self) -> bool:
        last = self.marks[-1][0] if self.marks else 0
        return self.actions - last >= self.every

    def checkpoint(self) -> None:
        """Keep the model as it is now; cut what no window needs."""
        self.marks.append((self.actions, self.h.model))
        if self.trim and len(self.marks) == self.marks.maxlen:
            drop = self.marks[0][0] - self.cut
            if drop > 0:
                del self.h.trace[:drop]
                self.cut += drop

    def candidates(self) -> list[tuple[Action, ...]]:
        """Traces from an empty cache that end with the last action, the
        shortest first: the setup of each checkpoint and the actions since,
        then the whole play when nothing was cut."""
        trace = self.h.trace
        out = [setup_actions(model.state) + tuple(trace[at - self.cut:])
               for at, model in reversed(self.marks)]
        if self.cut == 0:
            out.append(tuple(trace))
        return out


class TraceProxy(ManagerProxy):
    """``ManagerProxy`` whose request numbers never repeat, whatever
    ``_drop_finished`` forgets."""

    def __init__(self, harness: Lockstep) -> None:
        super().__init__(harness)
        self._requests = itertools.count()

    def new_context(self, req_id: str) -> TrafficContext:
        self.request_of[req_id] = next(self._requests)
        return TrafficContext(req_id)


def _drop_finished(harness: Lockstep, proxy: ManagerProxy, running: set[str]) -> None:
    """Forget the requests that finished (spec/traffic.md, "The trace engine"): in the model's
    table, the harness's contexts and the proxy's names."""
    model = harness.model
    requests = model.requests
    live = {proxy.request_of[req_id] for req_id in running if req_id in proxy.request_of}
    done = {r for r, q in requests.table.items()
            if r not in live and (q.finished or q.generation != requests.generation)}
    if not done:
        return
    table = {r: q for r, q in requests.table.items() if r not in done}
    harness.model = replace(model, requests=Requests(table, requests.generation))
    for r in done:
        harness.contexts.pop(r, None)
    for req_id in [q for q, r in proxy.request_of.items() if r in done]:
        del proxy.request_of[req_id]


TIMINGS = (Timing(), Timing(transfer_ms_per_block=20.0, decode_ms_per_token=1.0))
"""The sample's examples alternate (in pairs) between the player's timing
and one of slow transfers and short answers, where loads and stores are
still under way when other requests look the same blocks up and when
their own request finishes (vLLM finishes a request before its stores
complete)."""


@dataclass(frozen=True)
class _Example:
    requests: Sequence[TraceRequest] | None
    """None: the whole file."""
    capacity: int
    threshold: int
    observe: bool
    timing: Timing = TIMINGS[0]


def _sample_examples(seed: int, total: int, capacity: int, fixed: bool) -> list[_Example]:
    """The sample's examples (spec/traffic.md, "The trace engine"): ``total`` requests in runs of
    ``EXAMPLE_REQUESTS`` from offsets the seed picks."""
    sample = list(read_trace(sample_path()))
    rng = random.Random(f"trace:{seed}")
    sizes = [capacity] if fixed else sorted({*SIZES, capacity})
    examples = []
    for index in range(max(1, -(-total // EXAMPLE_REQUESTS))):
        start = int(rng.random() * max(1, len(sample) - EXAMPLE_REQUESTS))
        examples.append(_Example(sample[start:start + EXAMPLE_REQUESTS], sizes[index % len(sizes)],
                                 THRESHOLD if index % 2 else 1, index % OBSERVE_EVERY == 3,
                                 TIMINGS[index // 2 % len(TIMINGS)]))
    return examples


def run_trace(ctx: EngineContext, *, fatal: Callable[[str], bool] | None = None) -> EngineRun:
    """Play the sample (or the file ``--trace`` names: ``ctx.options.trace``)
    on the subject (spec/traffic.md, "The trace engine"), until the
    wall-time cap at most; the sample's count of requests is
    ``ctx.examples`` (``ctx.count`` sets it exactly)."""
    subject, profile, capacity, cap = ctx.subject, ctx.profile, ctx.capacity, ctx.cap
    trace = ctx.options.trace
    run = EngineRun(engine=ENGINE)
    if not subject.has("hooks"):
        run.notes.append(
            f"the policy's revision ({subject.api}) has no request hooks: vLLM 0.33's and "
            "0.34's managers do not call it, so this engine made no call")
        return run
    started = monotonic()
    if trace is None:
        total = ctx.examples(REQUESTS_PER_UNIT)
        examples = _sample_examples(ctx.seed, total, capacity, ctx.capacity_fixed)
    else:
        examples = [_Example(None, capacity, 1, False)]
    run.planned = len(examples)
    played: Counter[str] = Counter()
    soft: dict[str, tuple[int, list[tuple[Action, ...]]]] = {}
    sightings = current_sightings()

    for example in examples:
        if ctx.capped():
            run.capped = True
            break
        own = None if example.capacity == capacity else example.capacity
        counts = _play(run, subject, profile, example, own, trace, fatal, soft, cap)
        run.examples += 1
        if counts is not None:
            for name in ("requests", "blocks", "hit_blocks", "stores", "stores_refused",
                         "blocks_stored", "blocks_evicted", "deferred", "late_completions"):
                played[name] += getattr(counts, name)
        if run.findings or run.error or sightings.stopped():
            break
    for requirement, (size, candidates) in soft.items():
        _judge(run, subject, profile, size, None if size == capacity else size, requirement,
               candidates, "", cap)
    run.counts.update({f"trace_{name}": value for name, value in sorted(played.items())})
    where = trace if trace is not None else (
        f"the bundled synthetic sample in {run.examples} run(s) of up to {EXAMPLE_REQUESTS} "
        "requests")
    if played["blocks"]:
        run.notes.append(
            f"{played['requests']:,} requests of {where} played through vLLM "
            f"{release_for(subject.api)}'s manager: "
            f"{played['blocks']:,} blocks named, {played['hit_blocks'] / played['blocks']:.1%} "
            f"loaded from the cache, {played['blocks_stored']:,} stored, "
            f"{played['blocks_evicted']:,} evicted, {played['stores_refused']:,} stores refused")
    run.seconds = monotonic() - started
    return run


def _play(
    run: EngineRun, subject: Subject, profile: Profile, example: _Example, own: int | None,
    trace: str | None, fatal: Callable[[str], bool] | None,
    soft: dict[str, tuple[int, list[tuple[Action, ...]]]], cap: float | None,
) -> PlayCounts | None:
    """One example: the play, and what it found (``own``: the example's
    capacity when it is not the run's)."""
    size = example.capacity
    harness = Lockstep(subject, profile, size, observe=example.observe, fatal=fatal)
    proxy = TraceProxy(harness)
    manager = manager_class(subject.api)(proxy, size, store_threshold=example.threshold,
                                         listener=proxy)
    audited = AuditedManager(manager, proxy)
    windows = Windows(harness)
    source = example.requests if example.requests is not None else read_trace(trace or "")
    player: Player
    seen_soft = 0

    def after_event() -> None:
        nonlocal seen_soft
        if len(harness.soft) > seen_soft:
            for failure in harness.soft[seen_soft:]:
                soft.setdefault(failure.requirement, (size, windows.candidates()))
            seen_soft = len(harness.soft)
        if windows.due():
            if example.requests is None:
                audited.audit("the last scheduler call")
                _drop_finished(harness, proxy, set(player.running))
                if not harness.observe:
                    harness.known.intersection_update(harness.state.refs)
            windows.checkpoint()

    player = Player(audited if example.observe else manager, source, timing=example.timing,
                    new_context=proxy.new_context, after_event=after_event)
    counts: PlayCounts | None = None
    try:
        counts = player.run()
    except ConformanceFailure as failure:
        _judge(run, subject, profile, size, own, failure.requirement, windows.candidates(),
               failure.message, cap)
    except Aborted as aborted:
        run.add(Finding(aborted.failure.requirement, aborted.failure.message,
                        windows.candidates()[0], ENGINE, capacity=own))
    except CallTimeout:
        run.add(Finding("API-RETURNS", "a policy call did not return within the time limit",
                        windows.candidates()[0], ENGINE, capacity=own))
    except (ManagerAssertionError, ManagerCheckFailed) as exc:
        _manager_finding(run, subject, profile, size, own, windows.candidates(), exc, cap)
    except EmulationMismatch as exc:
        if not harness.soft:
            run.error = f"{ENGINE}: {exc}"
    run.calls += harness.calls
    run.steps += windows.actions
    run.checked.update(harness.checked)
    current_sightings().calls += harness.calls
    return counts


def _only(requirement: str) -> Callable[[str], bool]:
    return lambda rid: rid == requirement


def _judge(
    run: EngineRun, subject: Subject, profile: Profile, capacity: int, own: int | None,
    requirement: str, candidates: list[tuple[Action, ...]], message: str, cap: float | None,
) -> None:
    """The shortest window that fails again, shrunk (spec/traffic.md, "The trace engine") with
    SHRINK_TRIES replays, until the wall-time ``cap`` at most."""
    known = load_registry().get(requirement)
    fatal = None if known is None or known.level == "MUST" else _only(requirement)
    for window in candidates:
        replayed = failure_of(subject, profile, capacity, window, fatal=fatal)
        if replayed is None:
            continue
        found = replayed.requirement
        observed = fails_with(subject, profile, capacity, found)
        small = bounded_witness(
            without_lookups(replayed.trace, observed), observed,
            fails_with(subject, profile, capacity, found, observe=False, threads=False),
            SHRINK_TRIES, cap,
        )[0]
        confirmed = failure_of(subject, profile, capacity, small, fatal=_only(found))
        text = confirmed.message if confirmed is not None else replayed.message
        run.add(Finding(found, text, small, ENGINE, shrunk=True, capacity=own))
        return
    longest = candidates[-1]
    run.add(Finding(requirement, message, longest, ENGINE, capacity=own))
    run.notes.append(
        f"{requirement} was seen under the trace but did not fail again on a fresh policy "
        f"brought to the state of the last {len(longest):,} actions: the fault needs more of "
        "the policy's past; the finding shows that window as it was seen")


def _manager_finding(
    run: EngineRun, subject: Subject, profile: Profile, capacity: int, own: int | None,
    candidates: list[tuple[Action, ...]], exc: ManagerAssertionError | ManagerCheckFailed,
    cap: float | None,
) -> None:
    """The manager stopped on one of its own checks: a policy requirement
    that a window breaks is the finding, else the manager requirement the
    check protects, on the newest window (vllm-manager's rule)."""
    for window in candidates:
        replayed = failure_of(subject, profile, capacity, window)
        if replayed is not None:
            _judge(run, subject, profile, capacity, own, replayed.requirement, [window],
                   replayed.message, cap)
            return
    if isinstance(exc, ManagerCheckFailed):
        run.add(Finding(exc.requirement, str(exc), candidates[0], ENGINE, capacity=own))
        return
    requirement = manager_requirement(str(exc))
    if requirement is None:
        run.error = f"{ENGINE}: the emulated manager stopped on its own check ({exc})"
        return
    run.add(Finding(requirement, f"vLLM {release_for(subject.api)}'s manager stops with an "
                    f"AssertionError after the policy's last answer: {exc}", candidates[0],
                    ENGINE, capacity=own))




# A serving trace (the bundled sample, or --trace FILE) through the emulated
# manager of the policy's revision; the share buys a count of requests.
ENGINES = (Engine(ENGINE, run_trace, 0.08, needs="hooks"),)
