"""Request traffic for vLLM 0.33.0's offloading-manager interface: what its
scheduler asks of a ``CPUOffloadingManager``, generated from a seed.

``drive`` plays it on the real manager or on the emulation alike, and the
generator reacts only to what the manager answers, so two managers that
behave alike receive the same calls: that is what the differential test
compares (spec/development.md).
"""

from __future__ import annotations

import itertools
import queue
import random
import threading
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from policyspec.vllm.standins.keys import ReqContext, make_offload_key

__all__ = [
    "BLOCK_TOKENS",
    "ManagerInterface",
    "TrafficConfig",
    "TrafficCounts",
    "drive",
    "request_key",
]

BLOCK_TOKENS = 16
"""Tokens per chunk: a key at chunk index i ends at token 16 (i + 1)."""

T = TypeVar("T")


class ManagerInterface(Protocol):
    """The calls the scheduler makes of an offloading manager (vLLM 0.33.0's
    ``OffloadingManager``, the part a CPU manager implements)."""

    def on_new_request(self, req_context: Any) -> Any: ...
    def lookup(self, key: Any, req_context: Any) -> Any: ...
    def prepare_load(self, keys: Collection[Any], req_context: Any) -> Any: ...
    def complete_load(self, keys: Collection[Any], req_context: Any) -> Any: ...
    def touch(self, keys: Collection[Any], req_context: Any) -> Any: ...
    def prepare_store(self, keys: Collection[Any], req_context: Any) -> Any: ...
    def complete_store(
        self, keys: Collection[Any], req_context: Any, success: bool = True
    ) -> Any: ...
    def on_request_finished(self, req_context: Any) -> Any: ...
    def reset_cache(self) -> Any: ...
    def take_events(self) -> Iterable[Any]: ...


@dataclass(frozen=True)
class TrafficConfig:
    """How much traffic, and how often each irregularity happens."""

    seed: int = 0
    requests: int = 40
    families: int = 3
    """Requests of a family share the family's prefix."""
    prefix_chunks: tuple[int, int] = (2, 6)
    """Length range of a family's shared prefix, in chunks."""
    own_chunks: tuple[int, int] = (1, 6)
    """Length range of what a request adds to its prefix."""
    groups: int = 2
    """KV-cache groups; groups after the first hold only the tail."""
    window: int = 3
    """Chunks of the tail the later groups hold."""
    running: int = 3
    """Requests in flight at once."""
    batches: tuple[int, int] = (1, 4)
    """Store batches per request."""
    missing_positions: float = 0.2
    """Chance that a request leaves a few keys without a position."""
    out_of_order: float = 0.3
    """Chance that a request stores its batches in a shuffled order."""
    overlap: float = 0.25
    """Chance that a batch offers the request's earlier keys again."""
    failure: float = 0.1
    """Chance that a store job fails."""
    delay: tuple[int, int] = (0, 2)
    """Steps a transfer takes to complete."""
    touch: float = 0.05
    """Chance per step that a running request's keys are touched (0 for
    vLLM 0.34's manager, which has no touch)."""
    reset: float = 0.02
    """Chance per step of a reset_cache."""
    two_threads: bool = False


@dataclass
class TrafficCounts:
    """What the traffic did (each a number of manager calls unless named
    otherwise)."""

    requests: int = 0
    steps: int = 0
    lookups: int = 0
    loads: int = 0
    stores: int = 0
    stores_refused: int = 0
    """prepare_store calls that returned None."""
    chunks_stored: int = 0
    """Keys the manager accepted to store."""
    evicted: int = 0
    """Keys the manager reported evicted."""
    store_failures: int = 0
    finishes: int = 0
    touches: int = 0
    resets: int = 0
    jobs_dropped: int = 0
    """Transfers in flight at a reset that never complete."""
    events: int = 0
    unpositioned_requests: int = 0
    """Requests with some keys left without a position."""
    shuffled_requests: int = 0
    """Requests whose batches were offered out of prefix order."""
    late_completions: int = 0
    """Transfers completed after their request's finish."""
    calls_by_thread: list[int] = field(default_factory=lambda: [0, 0])


def request_key(block: int, group: int) -> bytes:
    """The key of block ``block`` (a number naming its content) in KV-cache
    group ``group``, in vLLM's key layout."""
    return make_offload_key(block.to_bytes(8, "big"), group)


@dataclass
class _Job:
    due: int
    store: bool
    keys: list[Any]
    request: _Request


@dataclass
class _Request:
    context: Any
    batches: list[list[Any]]
    """Store batches still to offer, in the order they will be offered."""
    offered: list[Any] = field(default_factory=list)
    retried: bool = False
    finished_at: int | None = None
    """Step at which the request ends (its finish may be signalled later)."""
    signalled: bool = False
    all_batches: list[list[Any]] = field(default_factory=list)


class _Caller:
    """Runs each manager call under one lock, on the driving thread or on a
    second one (two_threads), and counts calls per thread."""

    def __init__(self, rng: random.Random, two_threads: bool, counts: TrafficCounts) -> None:
        self._rng = rng
        self._lock = threading.Lock()
        self._counts = counts
        self._tasks: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._worker: threading.Thread | None = None
        if two_threads:
            self._worker = threading.Thread(
                target=self._serve, name="policyspec-traffic-2", daemon=True
            )
            self._worker.start()

    def _serve(self) -> None:
        while True:
            task = self._tasks.get()
            if task is None:
                return
            task()

    def __call__(self, fn: Callable[..., T], *args: Any) -> T:
        on_worker = self._worker is not None and self._rng.random() < 0.5
        self._counts.calls_by_thread[1 if on_worker else 0] += 1
        if not on_worker:
            with self._lock:
                return fn(*args)
        outcome: list[Any] = []
        done = threading.Event()

        def task() -> None:
            try:
                with self._lock:
                    outcome.append((True, fn(*args)))
            except BaseException as exc:
                outcome.append((False, exc))
            done.set()

        self._tasks.put(task)
        done.wait()
        ok, value = outcome[0]
        if not ok:
            raise value
        result: T = value
        return result

    def close(self) -> None:
        if self._worker is not None:
            self._tasks.put(None)
            self._worker.join()
            self._worker = None


class _Traffic:
    def __init__(
        self,
        manager: ManagerInterface,
        config: TrafficConfig,
        req_context_type: Callable[[str], Any],
    ) -> None:
        self.manager = manager
        self.config = config
        self.rng = random.Random(config.seed)
        self.new_context = req_context_type
        self.counts = TrafficCounts()
        self.call = _Caller(random.Random(config.seed ^ 0x5EED), config.two_threads, self.counts)
        self.families = [
            self.rng.randint(*config.prefix_chunks) for _ in range(config.families)
        ]
        self.running: list[_Request] = []
        self.jobs: list[_Job] = []
        self.step = 0
        self.next_block = 1000

    # -- requests -------------------------------------------------------------

    def _blocks(self, family: int) -> list[int]:
        """Block numbers of a new request: its family's prefix, then blocks
        of its own."""
        prefix = [family * 100 + i for i in range(self.families[family])]
        own = self.rng.randint(*self.config.own_chunks)
        blocks = prefix + list(range(self.next_block, self.next_block + own))
        self.next_block += own
        return blocks

    def _start(self, number: int) -> None:
        config, rng = self.config, self.rng
        context = self.new_context(f"req-{number}")
        blocks = self._blocks(rng.randrange(config.families))
        tail = max(0, len(blocks) - config.window)
        chunks: list[list[Any]] = []  # keys of each chunk index, group by group
        for index, block in enumerate(blocks):
            groups = [0] + [g for g in range(1, config.groups) if index >= tail]
            chunks.append([request_key(block, g) for g in groups])
        unpositioned: set[Any] = set()
        if rng.random() < config.missing_positions:
            every = [key for keys in chunks for key in keys]
            unpositioned = set(rng.sample(every, rng.randint(1, min(2, len(every)))))
            self.counts.unpositioned_requests += 1
        for index, keys in enumerate(chunks):
            for key in keys:
                if key not in unpositioned:
                    context.set_offload_key_position(key, BLOCK_TOKENS * (index + 1))
        self.call(self.manager.on_new_request, context)
        self.counts.requests += 1
        hits = self._lookup_prefix(context, chunks)
        loaded = [key for keys in chunks[:hits] for key in keys]
        request = _Request(context, [])
        if loaded:
            self.call(self.manager.prepare_load, loaded, context)
            self.counts.loads += 1
            self._schedule(_Job(0, False, loaded, request))
        batches = self._batches(chunks[hits:])
        if len(batches) > 1 and rng.random() < config.out_of_order:
            in_order = list(batches)
            rng.shuffle(batches)
            self.counts.shuffled_requests += batches != in_order
        request.batches = list(batches)
        request.all_batches = list(batches)
        self.running.append(request)

    def _batches(self, chunks: list[list[Any]]) -> list[list[Any]]:
        """The chunks to store, cut into consecutive batches."""
        wanted = self.rng.randint(*self.config.batches)
        cuts = sorted(self.rng.sample(range(1, len(chunks)), min(len(chunks), wanted) - 1)
                      ) if chunks else []
        bounds = [0, *cuts, len(chunks)]
        return [
            [key for keys in chunks[a:b] for key in keys] for a, b in itertools.pairwise(bounds)
            if b > a
        ]

    def _lookup_prefix(self, context: Any, chunks: list[list[Any]]) -> int:
        """Chunks of the prefix that are cached and ready, looked up in
        order until the first that is not."""
        for index, keys in enumerate(chunks):
            for key in keys:
                self.counts.lookups += 1
                if _name(self.call(self.manager.lookup, key, context)) != "HIT":
                    return index
        return len(chunks)

    def _store_next(self, request: _Request) -> None:
        batch = request.batches[0]
        offer = list(batch)
        if request.offered and self.rng.random() < self.config.overlap:
            offer = request.offered[-self.rng.randint(1, len(request.offered)):] + offer
        self.counts.stores += 1
        output = self.call(self.manager.prepare_store, offer, request.context)
        if output is None:
            self.counts.stores_refused += 1
            if not request.retried:
                request.retried = True  # offered once more next step
                return
        else:
            stored = list(output.keys_to_store)
            self.counts.chunks_stored += len(stored)
            self.counts.evicted += len(output.evicted_keys)
            if stored:
                self._schedule(_Job(0, True, stored, request))
        request.retried = False
        request.offered.extend(batch)
        request.batches.pop(0)

    def _schedule(self, job: _Job) -> None:
        job.due = self.step + self.rng.randint(*self.config.delay)
        self.jobs.append(job)

    def _complete(self, job: _Job) -> None:
        context = job.request.context
        self.counts.late_completions += job.request.signalled
        if not job.store:
            self.call(self.manager.complete_load, job.keys, context)
            return
        success = self.rng.random() >= self.config.failure
        self.counts.store_failures += not success
        self.call(self.manager.complete_store, job.keys, context, success)

    def _finish(self, request: _Request) -> None:
        request.signalled = True
        self.counts.finishes += 1
        self.call(self.manager.on_request_finished, request.context)

    # -- steps ----------------------------------------------------------------

    def _reset(self) -> None:
        """vLLM's scheduler at reset_cache: finish what ended, reset, forget
        or complete the jobs in flight, restart running requests' stores."""
        for request in self.running:
            if request.finished_at is not None and not request.signalled:
                self._finish(request)
        self.running = [r for r in self.running if r.finished_at is None]
        if self.rng.random() < 0.5:
            for job in self.jobs:  # the transfers happened to end first
                self._complete(job)
        else:
            self.counts.jobs_dropped += len(self.jobs)
        self.jobs = []
        self.call(self.manager.reset_cache)
        self.counts.resets += 1
        for request in self.running:
            request.batches = list(request.all_batches)
            request.offered = []
            request.retried = False

    def _one_step(self, started: int) -> int:
        config, rng = self.config, self.rng
        while len(self.running) < config.running and started < config.requests:
            self._start(started)
            started += 1
        for request in list(self.running):
            if request.batches and rng.random() < 0.8:
                self._store_next(request)
        if self.running and config.touch and rng.random() < config.touch:
            request = rng.choice(self.running)
            keys = request.offered or [k for b in request.all_batches for k in b]
            if keys:
                self.counts.touches += 1
                self.call(self.manager.touch, keys[: rng.randint(1, len(keys))],
                          request.context)
        due = [job for job in self.jobs if job.due <= self.step]
        self.jobs = [job for job in self.jobs if job.due > self.step]
        for job in due:
            self._complete(job)
        for request in self.running:
            if not request.batches and request.finished_at is None:
                request.finished_at = self.step
        for request in self.running:
            # Finish is signalled at once or a step later; transfers of the
            # request may still complete after it.
            if (
                request.finished_at is not None
                and not request.signalled
                and (request.finished_at < self.step or rng.random() < 0.5)
            ):
                self._finish(request)
        self.running = [r for r in self.running if not r.signalled]
        self.counts.events += len(list(self.call(_drain, self.manager)))
        if rng.random() < config.reset:
            self._reset()
        self.step += 1
        return started

    def run(self) -> TrafficCounts:
        started = 0
        try:
            while started < self.config.requests or self.running or self.jobs:
                started = self._one_step(started)
            self.counts.steps = self.step
        finally:
            self.call.close()
        return self.counts


def _drain(manager: ManagerInterface) -> list[Any]:
    """take_events consumed whole under the lock (vLLM's scheduler lists
    it at once)."""
    return list(manager.take_events())


def _name(result: Any) -> str:
    return str(getattr(result, "name", result))


def drive(
    manager: ManagerInterface,
    config: TrafficConfig = TrafficConfig(),
    *,
    req_context_type: Callable[[str], Any] = ReqContext,
) -> TrafficCounts:
    """Play ``config``'s traffic against ``manager`` (spec/development.md). Requests'
    contexts are built as ``req_context_type(req_id)``: pass vLLM's
    ``ReqContext`` to drive the real manager."""
    return _Traffic(manager, config, req_context_type).run()
