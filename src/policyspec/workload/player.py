"""A serving trace played as the calls vLLM's scheduler makes of its
offloading manager (spec/traffic.md, "From a trace to manager calls").

Time is the trace's, advanced from event to event and never read from a
clock, so the same trace gives the same calls; the trace is read one
request ahead, so memory follows the running requests, not its length.
``play_in_turn`` switches some of the manager's mechanisms off (``SEMANTICS``)
to tell a gap from a plain simulator's numbers from a bug.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from policyspec.releases import RELEASES
from policyspec.vllm.manager import emulation
from policyspec.vllm.standins.keys import ReqContext
from policyspec.vllm.traffic import ManagerInterface
from policyspec.workload.reader import BLOCK_TOKENS, TraceRequest, block_key

__all__ = [
    "MANAGERS",
    "SEMANTICS",
    "PlayCounts",
    "Player",
    "Timing",
    "manager_class",
    "manager_release",
    "play",
    "play_in_turn",
]

MANAGERS: dict[str, Callable[..., Any]] = {
    "R8": partial(emulation(RELEASES[0].series), release=RELEASES[0].series),
    **{r.revision: partial(emulation(r.series), release=r.series) for r in RELEASES},
}
"""The emulated manager that drives a policy of each API revision with the
request hooks: each release folder's (policyspec.releases, ``emulation``:
its ``manager.py`` when it has one) for its revision, and the oldest
release's for R8, whose hooks it also calls."""


RELEASE_OF: dict[str, str] = {r.revision: r.version for r in RELEASES[1:]}
"""The vLLM release whose manager ``MANAGERS`` holds for a revision, where
it is not the oldest release's."""

SEMANTICS: dict[str, str] = {
    "plain": "every block a request of its own, looked up; a miss inserts it, evicting one "
             "block when the cache is full; nothing in flight",
    "requests": "each trace request one request (its context and hooks); lookups stop at "
                "the first miss and the hit prefix is loaded; the rest is stored block by "
                "block; nothing in flight",
    "batches": "as requests, but the rest is offered to prepare_store chunk_blocks at a time "
               "(all offered keys protected, one evict call for the shortfall)",
    "vllm": "the manager played in time (Player): requests overlap, loads and stores take "
            "time, blocks in flight are pinned, lookups of them deferred",
}
"""How a trace is played, plainest first; each adds one of the manager's
mechanisms to the one before, and ``vllm`` is the whole of it (the
default)."""


def manager_release(api: str) -> str:
    """The vLLM release whose manager plays a policy of revision ``api``."""
    return RELEASE_OF.get(api, RELEASES[0].version)


def manager_class(api: str) -> Callable[..., Any]:
    """The emulated manager for a policy of revision ``api``; revisions
    without the request hooks are played by vLLM 0.33.0's manager through
    the base class's default hooks (``workload.ports``)."""
    return MANAGERS.get(api, MANAGERS["R8"])


@dataclass(frozen=True)
class Timing:
    """How long the work of a request takes (defaults: a mid-size model on
    one GPU). Only the order of the calls depends on them."""

    prefill_tokens_per_ms: float = 10.0
    decode_ms_per_token: float = 20.0
    transfer_ms_per_block: float = 0.5
    chunk_blocks: int = 4
    """Blocks prefilled per scheduler step (one store offer each)."""
    retry_ms: float = 50.0
    """A deferred lookup, or a refused store after the last prefill step,
    is tried again after this long."""
    max_running: int = 256
    """Requests running at once (vLLM's ``max_num_seqs``); later arrivals
    wait for a slot."""


@dataclass
class PlayCounts:
    """What a play did. Block counts are of keys; the rest are calls of
    the manager unless named otherwise."""

    requests: int = 0
    blocks: int = 0
    """Blocks the requests named (the denominator of the hit rate)."""
    hit_blocks: int = 0
    """Blocks loaded from the CPU tier (each request's hit prefix)."""
    lookups: int = 0
    deferred: int = 0
    """Lookup rounds deferred by a block still being stored (HIT_PENDING)."""
    loads: int = 0
    stores: int = 0
    """``prepare_store`` calls."""
    stores_refused: int = 0
    """... that returned None (no room: too few idle blocks, or the policy
    refused to evict)."""
    blocks_stored: int = 0
    blocks_evicted: int = 0
    finishes: int = 0
    late_completions: int = 0
    """Transfers completed after their request's finish."""
    most_running: int = 0
    waited: int = 0
    """Requests that started after their arrival, for want of a slot."""
    last_ms: float = 0.0
    """The trace time of the last call."""

    @property
    def hit_rate(self) -> float:
        return self.hit_blocks / self.blocks if self.blocks else 0.0


_LOOKUP, _STORE, _LOAD_DONE, _STORE_DONE, _FINISH = range(5)


@dataclass
class _Running:
    request: TraceRequest
    context: Any
    keys: list[bytes]
    hits: int = 0
    accepted: int = 0
    """Keys ``keys[:accepted]`` are hits or were accepted by a store."""
    finish_us: int = 0
    finished: bool = False
    loads: list[bytes] = field(default_factory=list)


class Player:
    """One play of a trace against one manager (spec/traffic.md). ``running``
    holds the requests started and not finished, by request id."""

    def __init__(
        self,
        manager: ManagerInterface,
        requests: Iterable[TraceRequest],
        *,
        timing: Timing = Timing(),
        new_context: Callable[[str], Any] = ReqContext,
        after_event: Callable[[], None] | None = None,
    ) -> None:
        self.manager = manager
        self.timing = timing
        self.new_context = new_context
        self.after_event = after_event
        """Called after every event's calls (a checker's checkpoint)."""
        self.counts = PlayCounts()
        self.running: dict[str, _Running] = {}
        self._requests: Iterator[TraceRequest] = iter(requests)
        self._events: list[tuple[int, int, int, _Running, list[bytes]]] = []
        self._seq = 0
        self.now_us = 0

    # -- time ---------------------------------------------------------------

    def _at(self, us: int, kind: int, running: _Running, keys: list[bytes] | None = None
            ) -> None:
        self._seq += 1
        heapq.heappush(self._events, (us, self._seq, kind, running, keys or []))

    @staticmethod
    def _us(ms: float) -> int:
        return math.ceil(ms * 1000.0)

    # -- the play -----------------------------------------------------------

    def run(self) -> PlayCounts:
        """Play every request of the trace to its end."""
        pending = next(self._requests, None)
        events = self._events
        slots = self.timing.max_running
        while pending is not None or events:
            arrival = self._us(pending.arrival_ms) if pending is not None else 0
            if pending is not None and len(self.running) < slots and (
                    not events or arrival <= events[0][0]):
                if arrival < self.now_us:
                    self.counts.waited += 1
                self.now_us = max(self.now_us, arrival)
                self._start(pending)
                pending = next(self._requests, None)
            else:
                us, _, kind, running, keys = heapq.heappop(events)
                self.now_us = us
                self._event(kind, running, keys)
            if self.after_event is not None:
                self.after_event()
        self.counts.last_ms = self.now_us / 1000.0
        return self.counts

    def _start(self, request: TraceRequest) -> None:
        counts = self.counts
        counts.requests += 1
        req_id = f"trace-{counts.requests}-line-{request.line}"
        context = self.new_context(req_id)
        keys = [block_key(block) for block in request.blocks]
        for index, key in enumerate(keys):
            context.set_offload_key_position(key, BLOCK_TOKENS * (index + 1))
        running = _Running(request, context, keys)
        self.running[req_id] = running
        counts.most_running = max(counts.most_running, len(self.running))
        counts.blocks += len(keys)
        self.manager.on_new_request(context)
        self._lookup(running)

    def _event(self, kind: int, running: _Running, keys: list[bytes]) -> None:
        if kind == _LOOKUP:
            self._lookup(running)
        elif kind == _STORE:
            if not running.finished:
                self._store(running, len(keys))
        elif kind == _LOAD_DONE:
            self.counts.late_completions += running.finished
            self.manager.complete_load(keys, running.context)
        elif kind == _STORE_DONE:
            self.counts.late_completions += running.finished
            self.manager.complete_store(keys, running.context)
        else:
            self._finish(running)

    def _lookup(self, running: _Running) -> None:
        """The hit prefix (spec/traffic.md, steps 1 and 2), then the prefill's plan."""
        manager, context, counts = self.manager, running.context, self.counts
        hits = 0
        deferred = False
        for key in running.keys:
            counts.lookups += 1
            result = _name(manager.lookup(key, context))
            if result == "MISS":
                break
            deferred |= result != "HIT"
            hits += 1
        if deferred:
            counts.deferred += 1
            self._at(self.now_us + self._us(self.timing.retry_ms), _LOOKUP, running)
            return
        timing = self.timing
        running.hits = running.accepted = hits
        start = self.now_us
        if hits:
            loaded = running.keys[:hits]
            manager.prepare_load(loaded, context)
            counts.loads += 1
            counts.hit_blocks += hits
            start += self._us(hits * timing.transfer_ms_per_block)
            self._at(start, _LOAD_DONE, running, loaded)
        blocks = len(running.keys)
        prefill = max(0, running.request.input_tokens - hits * BLOCK_TOKENS)
        end = start + self._us(prefill / timing.prefill_tokens_per_ms)
        for upto in range(hits + timing.chunk_blocks, blocks + timing.chunk_blocks,
                          timing.chunk_blocks):
            upto = min(upto, blocks)
            done = min(end, start + self._us(
                (upto - hits) * BLOCK_TOKENS / timing.prefill_tokens_per_ms))
            self._at(done, _STORE, running, running.keys[:upto])
        running.finish_us = end + self._us(
            running.request.output_tokens * timing.decode_ms_per_token)
        self._at(running.finish_us, _FINISH, running)

    def _store(self, running: _Running, upto: int, *, final: bool = False) -> None:
        """Offer the computed keys not yet accepted (spec/traffic.md, step 3); a
        refused offer of the last step is offered again later, until the
        ``final`` one at the finish."""
        if upto <= running.accepted:
            return
        counts = self.counts
        offer = running.keys[running.accepted:upto]
        counts.stores += 1
        output = self.manager.prepare_store(offer, running.context)
        if output is None:
            counts.stores_refused += 1
            retry_at = self.now_us + self._us(self.timing.retry_ms)
            if not final and upto == len(running.keys) and retry_at < running.finish_us:
                self._at(retry_at, _STORE, running, running.keys)
            return
        running.accepted = upto
        stored = list(output.keys_to_store)
        counts.blocks_stored += len(stored)
        counts.blocks_evicted += len(output.evicted_keys)
        if stored:
            done = self.now_us + self._us(len(stored) * self.timing.transfer_ms_per_block)
            self._at(done, _STORE_DONE, running, stored)

    def _finish(self, running: _Running) -> None:
        """A last store attempt, then the finish (spec/traffic.md, step 4)."""
        self._store(running, len(running.keys), final=True)
        running.finished = True
        self.counts.finishes += 1
        self.manager.on_request_finished(running.context)
        del self.running[running.context.req_id]


def play_in_turn(
    manager: ManagerInterface,
    requests: Iterable[TraceRequest],
    *,
    semantics: str,
    chunk_blocks: int = Timing.chunk_blocks,
    new_context: Callable[[str], Any] = ReqContext,
    counts: PlayCounts | None = None,
) -> PlayCounts:
    """Play ``requests`` one after the other, each to its end before the
    next starts, with no time between calls (``SEMANTICS``: ``plain``,
    ``requests`` or ``batches``). Every store completes and every load ends
    before the next call, so nothing is ever in flight or pinned when a
    policy is asked to evict, and a lookup never finds a block pending.
    The counts go to ``counts`` when given, so that a caller still has
    them when the policy stops the play."""
    if semantics not in ("plain", "requests", "batches"):
        raise ValueError(f"no play in turn for semantics {semantics!r}")
    counts = PlayCounts() if counts is None else counts
    batch = chunk_blocks if semantics == "batches" else 1
    for request in requests:
        counts.requests += 1
        keys = [block_key(block) for block in request.blocks]
        counts.blocks += len(keys)
        req_id = f"trace-{counts.requests}-line-{request.line}"
        if semantics == "plain":
            for index, key in enumerate(keys):
                context = new_context(f"{req_id}-block-{index}")
                context.set_offload_key_position(key, BLOCK_TOKENS * (index + 1))
                _in_turn(manager, context, [key], counts, 1)
        else:
            context = new_context(req_id)
            for index, key in enumerate(keys):
                context.set_offload_key_position(key, BLOCK_TOKENS * (index + 1))
            _in_turn(manager, context, keys, counts, batch)
    return counts


def _in_turn(
    manager: ManagerInterface, context: Any, keys: list[bytes], counts: PlayCounts, batch: int
) -> None:
    """One request from its start to its finish, with no time passing."""
    counts.most_running = 1
    manager.on_new_request(context)
    hits = 0
    for key in keys:
        counts.lookups += 1
        if _name(manager.lookup(key, context)) == "MISS":
            break
        hits += 1
    if hits:
        loaded = keys[:hits]
        manager.prepare_load(loaded, context)
        counts.loads += 1
        counts.hit_blocks += hits
        manager.complete_load(loaded, context)
    accepted = hits
    for upto in range(hits + batch, len(keys) + batch, batch):
        upto = min(upto, len(keys))
        counts.stores += 1
        output = manager.prepare_store(keys[accepted:upto], context)
        if output is None:
            counts.stores_refused += 1  # offered again with the next batch, as the Player does
            continue
        accepted = upto
        stored = list(output.keys_to_store)
        counts.blocks_stored += len(stored)
        counts.blocks_evicted += len(output.evicted_keys)
        if stored:
            manager.complete_store(stored, context)
    counts.finishes += 1
    manager.on_request_finished(context)


def _name(result: Any) -> str:
    return str(getattr(result, "name", result))


def play(
    manager: ManagerInterface,
    requests: Iterable[TraceRequest],
    *,
    timing: Timing = Timing(),
    new_context: Callable[[str], Any] = ReqContext,
) -> PlayCounts:
    """Play ``requests`` against ``manager`` (spec/traffic.md): vLLM's real
    ``CPUOffloadingManager`` (pass vLLM's ``ReqContext``) or an emulation."""
    return Player(manager, requests, timing=timing, new_context=new_context).run()
