"""The ``vllm-manager`` engine: the policy behind the emulated manager of its
own vLLM release (0.33.0 for R8 and R9, 0.34.0 for R10, a later folder's
``vllm.manager.emulation``), under seeded request traffic, every call
judged in lockstep against the profile's model. The seed-era manager
engine cannot show what only the request-level manager does to a policy
(spec/manager.md). ``ManagerProxy`` turns each call and ``ref_cnt`` write of
the emulation into a caller action of the model (a later release's new hook:
``("hook", name, r, keys)``); a call the caller contract forbids is an
engine error, never a verdict.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import fields
from time import monotonic
from typing import Any

from policyspec.environment import active
from policyspec.harness import Aborted, CallerContractError, ConformanceFailure, Lockstep
from policyspec.harness.sightings import current as current_sightings
from policyspec.harness.watchdog import CallTimeout
from policyspec.model.actions import Action
from policyspec.model.request import GROUP_STRIDE
from policyspec.model.state import IDLE, IN_FLIGHT
from policyspec.profiles import Profile
from policyspec.registry import load_registry
from policyspec.run.context import Engine, EngineContext
from policyspec.run.result import EngineRun, Finding
from policyspec.subject import Subject
from policyspec.vllm.manager import (
    ManagerAssertionError,
    OffloadingManagerEmulation,
    emulation,
    release_for,
)
from policyspec.vllm.standins.keys import ReqContext, get_offload_group_idx
from policyspec.vllm.traffic import TrafficConfig, TrafficCounts, drive
from policyspec.witness.minimise import bounded_witness
from policyspec.witness.reproduce import fails_with, failure_of

__all__ = [
    "ENGINE",
    "MANAGER_CHECKS",
    "AuditedManager",
    "EmulationMismatch",
    "ManagerCheckFailed",
    "ManagerProxy",
    "TrafficContext",
    "example_capacity",
    "example_config",
    "manager_requirement",
    "run_vllm_manager",
    "without_lookups",
]

ENGINE = "vllm-manager"
REQUESTS = 16
"""Requests of the long examples: enough for a 64-chunk cache to fill and
evict, and for ghosts of evicted chunks to be stored again. Every other
pair of examples has half as many: a fault that shows early shows on a
trace short enough to shrink within the engine's share."""
THRESHOLD = 2
"""The store threshold of the examples that turn it on (vLLM's tracker
admits a key at its second offer)."""
SIZES = (16, 32)
"""Cache sizes the examples cycle through beside the run's own capacity
(unless it was chosen, ``--capacity``): 0.33's traffic offers up to a dozen
chunks per request, and only a small cache makes it evict often enough for
an order, a ghost or a reset's ranks to show."""
RESET = 0.05
"""Chance per traffic step of a ``reset_cache`` (the traffic's default is
rarer): what a reset does to running requests needs requests after it."""
OBSERVE_EVERY = 4
"""Every this many examples, the harness also asks ``get`` of every key
seen after each call (its presence sweep: slower, sees a hook that drops
a key at once)."""

MANAGER_CHECKS = (
    ("evictable count below 0", "MANAGER-IDLE-COUNT"),
    ("not found", "MANAGER-NO-LOST-DATA"),
    ("not ready", "MANAGER-NO-LOST-DATA"),
    ("ref_cnt is already 0", "MANAGER-NO-LOST-DATA"),
    ("pool ran dry", "MANAGER-BLOCK-IDS"),
    ("wrong number of chunks", "MANAGER-BLOCK-IDS"),
)
"""Which manager requirement each of the emulation's assertions protects
(by a phrase of its message): the idle counter, the data of a pinned or
in-flight chunk, the chunk-id pool."""


class ManagerCheckFailed(Exception):
    """One of the manager's promises (spec/manager.md) failed under the
    traffic: ``requirement`` names it."""

    def __init__(self, requirement: str, message: str) -> None:
        super().__init__(message)
        self.requirement = requirement


class EmulationMismatch(Exception):
    """The emulation did something the model's actions cannot express (a
    bug in policyspec, not the policy's fault)."""


class TrafficContext(ReqContext):
    """The traffic's ``ReqContext`` (the emulation keeps its own records in
    it), remembering the positions placed since the proxy last read them."""

    def __init__(self, req_id: str) -> None:
        super().__init__(req_id)
        self.placed: list[tuple[Any, int]] = []

    def set_offload_key_position(self, key: bytes, end_token: int) -> None:
        super().set_offload_key_position(key, end_token)
        self.placed.append((key, end_token))


class ManagerProxy:
    """The policy the emulation holds, and its ``RefCntListener`` (module
    doc): every call and write becomes a caller action on ``harness``."""

    def __init__(self, harness: Lockstep) -> None:
        self.h = harness
        self.model_of: dict[Any, int] = {}
        """Traffic key -> model key (same KV-cache group)."""
        self.traffic_of: dict[int, Any] = {}
        self.chunk_of: dict[int, Any] = {}
        """Model key -> the emulation's chunk of every key the policy holds."""
        self.id_owner: dict[int, int] = {}
        """Chunk id -> the model key whose chunk holds it."""
        self.request_of: dict[str, int] = {}
        self._next_key = 0
        self._chunk_id = 0
        self._absorb_write: tuple[int, int] | None = None
        """A write already performed by the last action (start_read from 0)."""
        self._absorb_mark: int | None = None
        """A mark_evictable already performed by the last action."""
        harness.allocator = lambda _k: self._chunk_id  # the emulation's id
        self.observed = harness.observed
        """The observation hooks a later release's manager calls
        (``__getattr__``)."""

    # -- names --------------------------------------------------------------------

    def model(self, key: Any) -> int:
        k = self.model_of.get(key)
        if k is None:
            k = get_offload_group_idx(key) * GROUP_STRIDE + self._next_key
            self._next_key += 1
            self.model_of[key] = k
            self.traffic_of[k] = key
        return k

    def _keys(self, keys: Iterable[Any]) -> tuple[int, ...]:
        return tuple(self.model(key) for key in keys)

    def new_context(self, req_id: str) -> TrafficContext:
        """The traffic's request contexts (``drive``'s ``req_context_type``)."""
        self.request_of.setdefault(req_id, len(self.request_of))
        return TrafficContext(req_id)

    def _request(self, req_context: Any) -> int:
        """The model request of a traffic context, its new positions placed."""
        r = self.request_of[req_context.req_id]
        placed = getattr(req_context, "placed", None)
        if placed:
            action = ("set_positions", r, tuple((self.model(k), p) for k, p in placed))
            placed.clear()
            self._do(action)
        return r

    def _do(self, action: Action) -> object:
        try:
            return self.h.apply(action)
        except CallerContractError as exc:
            raise EmulationMismatch(f"the emulated manager made {action!r}, which the "
                                    f"model's caller contract forbids: {exc}") from None

    def _chunk(self, k: int, got: object) -> Any:
        """The emulation's chunk for the policy's answer about key ``k``."""
        if got is None:
            return None
        block = self.h.blocks.get(k)
        if block is not None and got is block:
            return self.chunk_of[k]
        return got  # a wrong object the harness reported (only when not fatal)

    # -- the policy the emulation calls -----------------------------------------------

    def get(self, key: Any) -> Any:
        k = self.model(key)
        return self._chunk(k, self._do(("get", k)))

    def insert(self, key: Any, chunk: Any, req_context: Any) -> None:
        k, r = self.model(key), self._request(req_context)
        self.h.checked["MANAGER-BLOCK-IDS"] += 1
        owner = self.id_owner.get(chunk.chunk_id)
        if owner is not None:
            raise ManagerCheckFailed("MANAGER-BLOCK-IDS", (
                f"the manager hands chunk id {chunk.chunk_id} to key {k}, but key {owner} "
                "still holds it: an id was freed for a chunk still in use"))
        self._chunk_id = chunk.chunk_id
        self._do(("insert", k, chunk.ref_cnt, r))
        if k in self.h.blocks:
            self.chunk_of[k] = chunk
            self.id_owner[chunk.chunk_id] = k

    def _drop(self, k: int, default: Any = None) -> Any:
        chunk = self.chunk_of.pop(k, default)
        chunk_id = getattr(chunk, "chunk_id", None)
        if isinstance(chunk_id, int) and self.id_owner.get(chunk_id) == k:
            del self.id_owner[chunk_id]
        return chunk

    def remove(self, key: Any) -> None:
        k = self.model(key)
        self._do(("remove", k))
        self._drop(k)

    def touch(self, keys: Iterable[Any], req_context: Any) -> None:
        # The model's touch names no request: the policy gets the adapter's
        # default context (no 0.33 policy reads it in touch).
        self._do(("touch", self._keys(keys)))

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        self._do(("evict", n, frozenset(self._keys(protected))))
        raw = self.h.last_evict
        if not isinstance(raw, list):
            return None
        victims = []
        for key, block in raw:
            k = self.h.model_key(key)
            if k is None:
                victims.append((key, block))
                continue
            chunk = self._drop(k, block)
            victims.append((self.traffic_of.get(k, key), chunk))
        return victims

    def mark_evictable(self, key: Any) -> None:
        k = self.model(key)
        if self._absorb_mark != k:
            raise EmulationMismatch(f"mark_evictable({k}) without the write that idles it")
        self._absorb_mark = None

    def mark_non_evictable(self, key: Any) -> None:
        k = self.model(key)
        if self.h.state.refs.get(k) != IDLE:
            raise EmulationMismatch(f"mark_non_evictable({k}) of a key that is not idle")
        self._do(("start_read", k))
        self._absorb_write = (k, IDLE + 1)

    def clear(self) -> None:
        self._do(("clear",))
        self.chunk_of.clear()
        self.id_owner.clear()

    def on_store_miss(self, keys: Iterable[Any], req_context: Any) -> None:
        r = self._request(req_context)
        self._do(("on_store_miss", r, self._keys(keys)))

    def on_request_access(self, keys: Iterable[Any], req_context: Any) -> None:
        r = self._request(req_context)
        self._do(("on_request_access", r, self._keys(keys)))

    def on_request_finished(
        self, key_groups: Sequence[Sequence[Any]], insertion_only_keys: Collection[Any],
        reused_keys: Collection[Any], req_context: Any,
    ) -> None:
        r = self._request(req_context)
        groups = tuple(self._keys(group) for group in key_groups)
        self._do(("on_request_finished", r, groups, frozenset(self._keys(insertion_only_keys)),
                  frozenset(self._keys(reused_keys))))

    def __getattr__(self, name: str) -> Any:
        """An observation hook of the subject's revision, which a later
        release's manager calls (its folder's ``manager.py``): the model
        action ``("hook", name, r, keys)``."""
        if name not in self.__dict__.get("observed", ()):
            raise AttributeError(f"{type(self).__name__} has no {name}")

        def hook(keys: Iterable[Any], req_context: Any) -> None:
            r = self._request(req_context)
            self._do(("hook", name, r, self._keys(keys)))

        return hook

    # -- the RefCntListener -----------------------------------------------------------

    def before_write(self, key: Any, chunk: Any, new_ref_cnt: int) -> None:
        """A ``ref_cnt`` write of the emulation: a store completed
        (finish_store), a read started or ended (start_read / end_read)."""
        if chunk is None:
            return  # a new chunk's constructor: its insert follows
        k = self.model(key)
        if self._absorb_write == (k, new_ref_cnt):
            self._absorb_write = None
            return
        old = self.h.state.refs.get(k)
        if old == IN_FLIGHT and new_ref_cnt == IDLE:
            self._do(("finish_store", k))
            self._absorb_mark = k
        elif old is not None and old >= IDLE and new_ref_cnt == old + 1:
            self._do(("start_read", k))
        elif old is not None and old > IDLE and new_ref_cnt == old - 1:
            self._do(("end_read", k))
            if new_ref_cnt == IDLE:
                self._absorb_mark = k
        else:
            raise EmulationMismatch(
                f"the emulated manager writes ref_cnt {new_ref_cnt} to key {k}, whose model "
                f"ref_cnt is {old}: no caller action does that")

    def after_write(self, key: Any, chunk: Any, new_ref_cnt: int) -> None:
        return None


class AuditedManager:
    """The emulated manager, audited after each of the scheduler's calls
    (MANAGER-IDLE-COUNT, MANAGER-NO-LOST-DATA): every chunk the manager
    holds is still the policy's (``get`` of its key, asked outside the
    trace, returns the harness's block), and its count of evictable chunks
    equals the chunks the policy holds with ``ref_cnt`` 0. The ``get``
    calls are observations, like the harness's presence sweep."""

    def __init__(self, manager: OffloadingManagerEmulation, proxy: ManagerProxy) -> None:
        self.manager = manager
        self.proxy = proxy

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.manager, name)

        def audited(*args: Any) -> Any:
            result = method(*args)
            self.audit(name)
            return result

        return audited

    def audit(self, after: str) -> None:
        h, proxy = self.proxy.h, self.proxy
        checked = h.checked
        checked["MANAGER-NO-LOST-DATA"] += 1
        checked["MANAGER-IDLE-COUNT"] += 1
        idle = 0
        for k, chunk in proxy.chunk_of.items():
            block = h.blocks.get(k)
            h.calls += 1
            with active(h.environment):
                got = h.policy.get(h.key(k))  # (a raise here is seen by the next call)
            if block is not None and got is block:
                idle += chunk.ref_cnt == IDLE
            elif chunk.ref_cnt != IDLE or got is not None:
                state = {IN_FLIGHT: "in flight", IDLE: "idle"}.get(chunk.ref_cnt, "being read")
                raise ManagerCheckFailed("MANAGER-NO-LOST-DATA", (
                    f"after {after}, get({k}) returns "
                    f"{'None' if got is None else 'another object'} although the manager "
                    f"holds its chunk ({state}, chunk id {chunk.chunk_id})"))
        if idle != self.manager.num_evictable_chunks:
            raise ManagerCheckFailed("MANAGER-IDLE-COUNT", (
                f"after {after}, the manager counts {self.manager.num_evictable_chunks} "
                f"evictable chunks, but the policy holds {idle} of its chunks with ref_cnt 0"))


def example_config(
    seed: int, index: int, *, requests: int, resets: bool, touches: bool = True
) -> TrafficConfig:
    """Example ``index``'s traffic: its own seed from the run's, several
    batches per request, resets only where the policy has ``clear``,
    touches only where its manager has touch (not vLLM 0.34's)."""
    rng = random.Random(f"{seed}:{index}")
    return TrafficConfig(seed=rng.getrandbits(32), requests=requests,
                         reset=RESET if resets else 0.0,
                         touch=TrafficConfig.touch if touches else 0.0)


def example_capacity(capacity: int, index: int, fixed: bool) -> int:
    """Example ``index``'s cache size: the run's when it was chosen, else
    one of ``SIZES`` and the run's in turn."""
    if fixed:
        return capacity
    sizes = sorted({*SIZES, capacity})
    return sizes[index % len(sizes)]


def run_vllm_manager(
    ctx: EngineContext,
    *,
    requests: int = REQUESTS,
    fatal: Callable[[str], bool] | None = None,
) -> EngineRun:
    """Play vLLM manager traffic on the subject: RATE examples per work
    unit (``ctx.examples``), until the wall-time cap at most. Example i has
    the store threshold on when i is odd, ``requests`` requests (half as
    many for i = 0, 1 mod 4), and the cache size ``example_capacity``
    gives (a fixed capacity: always that one). The same
    seed gives the same calls in the same order."""
    subject, profile, capacity, seed = ctx.subject, ctx.profile, ctx.capacity, ctx.seed
    fixed, cap = ctx.capacity_fixed, ctx.cap
    run = EngineRun(engine=ENGINE)
    if not subject.has("hooks"):
        run.notes.append(
            f"the policy's revision ({subject.api}) has no request hooks: vLLM 0.33's and 0.34's "
            "managers "
            "do not drive it, so this engine made no call (the manager engine plays the "
            "seed-era manager)")
        return run
    run.planned = planned = ctx.examples(RATE)
    started = monotonic()
    traffic: Counter[str] = Counter()
    soft: dict[str, tuple[int, tuple[Action, ...]]] = {}
    on = off = skipped = 0
    sightings = current_sightings()
    while run.examples < planned:
        if ctx.capped():
            run.capped = True
            break
        index = run.examples
        threshold = THRESHOLD if index % 2 else 1
        config = example_config(seed, index, requests=requests if index // 2 % 2 else
                                requests // 2, resets=subject.has("clear"),
                                touches=subject.has("touch"))
        size = example_capacity(capacity, index, fixed)
        own = None if size == capacity else size
        harness = Lockstep(subject, profile, size, observe=index % OBSERVE_EVERY == 3,
                           fatal=fatal)
        proxy = ManagerProxy(harness)
        release = release_for(subject.api)
        manager = emulation(release)(proxy, size, store_threshold=threshold,
                                     enable_events=True, listener=proxy, release=release)
        driven: Any = AuditedManager(manager, proxy) if harness.observe else manager
        counts: TrafficCounts | None = None
        try:
            counts = drive(driven, config, req_context_type=proxy.new_context)
        except ConformanceFailure as failure:
            _judge(run, subject, profile, size, own, failure, cap)
        except Aborted as aborted:
            run.add(Finding(aborted.failure.requirement, aborted.failure.message,
                            aborted.failure.trace, ENGINE, capacity=own))
        except CallTimeout:
            run.add(Finding("API-RETURNS", "a policy call did not return within the time "
                            "limit", tuple(harness.trace), ENGINE, capacity=own))
        except (ManagerAssertionError, ManagerCheckFailed) as exc:
            _manager_finding(run, subject, profile, size, own, harness, exc, cap, fatal)
        except EmulationMismatch as exc:
            if not harness.soft:
                run.error = f"{ENGINE}, example {index}: {exc}"
            # else: the model stopped at a failure it could not follow (not
            # fatal in this run) while the emulation went on: that failure,
            # judged below, is the finding.
        run.examples += 1
        run.calls += harness.calls
        run.steps += len(harness.trace)
        run.checked.update(harness.checked)
        for seen in harness.soft:
            soft.setdefault(seen.requirement, (size, seen.trace))
        if counts is not None:
            on += threshold > 1
            off += threshold == 1
            skipped += manager.stores_skipped
            for name in (f.name for f in fields(counts)):
                value = getattr(counts, name)
                if isinstance(value, int):
                    traffic[name] += value
        sightings.calls += harness.calls
        if run.findings or run.error or sightings.stopped():
            break
    for requirement, (size, trace) in soft.items():
        replayed = failure_of(subject, profile, size, trace, fatal=_only(requirement))
        if replayed is not None:
            _judge(run, subject, profile, size, None if size == capacity else size, replayed,
                   cap)
    run.counts.update({
        "threshold_off_examples": off,
        "threshold_on_examples": on,
        "stores_skipped_by_threshold": skipped,
        **{f"traffic_{name}": value for name, value in sorted(traffic.items())},
    })
    if on + off:
        run.details.append(
            f"{on + off} traffic runs of vLLM {release_for(subject.api)}'s manager played to "
            f"the end ({off} with "
            f"the store threshold off, {on} with it at {THRESHOLD}: {skipped} key offers kept "
            f"out), {traffic['requests']} requests, {traffic['stores']} store batches, "
            f"{traffic['finishes']} finishes, {traffic['resets']} resets, "
            f"{traffic['evicted']} keys evicted")
    run.seconds = monotonic() - started
    return run


# -- findings ---------------------------------------------------------------------------

SHRINK_TRIES = 1000
"""Replays the engine shrinks one finding with (the report's minimiser
goes on from the result)."""

RATE = 70.0
"""Traffic examples per work unit (run.budget): calibrated in
benchmarks/results.txt, budgets."""


def _judge(
    run: EngineRun, subject: Subject, profile: Profile, capacity: int, own: int | None,
    failure: ConformanceFailure, cap: float | None,
) -> None:
    """The harness's failure, replayed from its trace and shrunk there
    (SHRINK_TRIES replays, until the wall-time ``cap`` at most). A
    replay that observes presence after every call (the run observed only
    every fourth example) may stop earlier, at another requirement: that
    one is the finding. A failure that does not replay stands as it was
    seen (the traffic's calls are the harness's, so it replays unless the
    policy is not deterministic)."""
    known = load_registry().get(failure.requirement)
    fatal = None if known is None or known.level == "MUST" else _only(failure.requirement)
    replayed = failure_of(subject, profile, capacity, failure.trace, fatal=fatal)
    if replayed is None:
        run.add(Finding(failure.requirement, failure.message, failure.trace, ENGINE,
                        capacity=own))
        return
    failure = replayed
    requirement = failure.requirement
    observed = fails_with(subject, profile, capacity, requirement)
    small = bounded_witness(
        without_lookups(failure.trace, observed),
        observed,
        fails_with(subject, profile, capacity, requirement, observe=False, threads=False),
        SHRINK_TRIES, cap,
    )[0]
    confirmed = failure_of(subject, profile, capacity, small, fatal=_only(requirement))
    message = confirmed.message if confirmed is not None else failure.message
    run.add(Finding(requirement, message, small, ENGINE, shrunk=True, capacity=own))


def without_lookups(trace: Sequence[Action], fails: Callable[[Sequence[Action]], bool]
                    ) -> tuple[Action, ...]:
    """``trace`` without its ``get`` actions but the last, when it still
    fails: the manager asks ``get`` of every key it offers, loads, completes
    or looks up, about half a traffic trace, and one replay here spares the
    shrinker hundreds."""
    last = len(trace) - 1
    lean = tuple(a for i, a in enumerate(trace) if a[0] != "get" or i == last)
    return lean if len(lean) < len(trace) and fails(lean) else tuple(trace)


def _only(requirement: str) -> Callable[[str], bool]:
    """Fatal for ``requirement`` alone."""
    return lambda rid: rid == requirement


def manager_requirement(message: str) -> str | None:
    """The manager requirement an assertion of the emulation protects."""
    for phrase, requirement in MANAGER_CHECKS:
        if phrase in message:
            return requirement
    return None


def _manager_finding(
    run: EngineRun, subject: Subject, profile: Profile, capacity: int, own: int | None,
    harness: Lockstep, exc: ManagerAssertionError | ManagerCheckFailed, cap: float | None,
    fatal: Callable[[str], bool] | None,
) -> None:
    """The emulation stopped on one of its own checks after a policy answer
    the harness let through (a failure it recorded as not fatal). When a
    replay of the trace raises a fatal failure of the policy's, that is
    the finding (a policy requirement names the cause); else the manager
    requirement the assertion protects, with the trace as it was: the
    seed-era replay that shrinks MANAGER-* findings (manager_replay) does
    not play request hooks."""
    trace = tuple(harness.trace)
    replay = Lockstep(subject, profile, capacity, fatal=fatal)
    try:
        replay.run(trace)
    except ConformanceFailure as failure:
        _judge(run, subject, profile, capacity, own, failure, cap)
        return
    except (Aborted, CallerContractError):
        pass
    if isinstance(exc, ManagerCheckFailed):
        run.add(Finding(exc.requirement, str(exc), trace, ENGINE, capacity=own))
        return
    requirement = manager_requirement(str(exc))
    if requirement is None:
        run.error = f"{ENGINE}: the emulated manager stopped on its own check ({exc})"
        return
    run.add(Finding(requirement, f"vLLM {release_for(subject.api)}'s manager stops with an "
                    f"AssertionError after the policy's last answer: {exc}", trace, ENGINE,
                    capacity=own))


# vLLM's manager of the policy's release (its emulation: 0.33.0 for R8 and
# R9, 0.34.0 for R10) under request traffic, for a policy with the request
# hooks; it makes no call, with a note, on other revisions.
ENGINES = (Engine(ENGINE, run_vllm_manager, 0.08, needs="hooks"),)
