"""vLLM's ``CPUOffloadingManager`` as policyspec code, release by release
(0.33.0 and 0.34.0): the caller a policy really has, reproduced call for
call, without vLLM installed (spec/manager.md; spec/contract.md, R9 and
R10). tests/test_vllm_differential.py holds it to the real manager. Clean
room: written from those facts and the wheels' observable behaviour; vLLM's
own ``assert`` checks are ``ManagerAssertionError`` here, at the same points.
A later release's folder may hold a ``manager.py`` whose ``Manager`` adds
the calls that release's manager makes (a new hook): ``emulation`` finds it.
"""

from __future__ import annotations

import functools
import importlib.util
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

from policyspec.releases import RELEASES as FOLLOWED
from policyspec.vllm.standins.keys import get_offload_group_idx
from policyspec.vllm.standins.policies import ChunkStatus

__all__ = [
    "Lookup",
    "ManagerAssertionError",
    "ManagerEvent",
    "OffloadingManagerEmulation",
    "RefCntListener",
    "RequestCacheAccess",
    "StoreOutput",
    "emulation",
]


class ManagerAssertionError(AssertionError):
    """One of the checks 0.33.0's manager makes with ``assert`` failed: the
    manager would stop with an AssertionError at this point too."""


class Lookup(Enum):
    """``lookup``'s answer (vLLM's ``LookupResult``; RETRY is never given by
    the CPU manager)."""

    MISS = "MISS"
    HIT = "HIT"
    HIT_PENDING = "HIT_PENDING"


@dataclass(frozen=True)
class StoreOutput:
    """What ``prepare_store`` hands the scheduler (vLLM's
    ``PrepareStoreOutput``, the store spec reduced to its chunk ids)."""

    keys_to_store: list[Any]
    chunk_ids: list[int]
    evicted_keys: list[Any]


@dataclass(frozen=True)
class ManagerEvent:
    """An offloading event (vLLM's ``OffloadingEvent``, CPU medium)."""

    keys: list[Any]
    removed: bool
    metadata_only: bool = False
    removal_expected: bool = False
    """0.34.0: a stored event says its chunks may be evicted later."""
    req_context: Any = field(default=None, compare=False)
    """0.34.0: the storing request's context, on a stored event."""


RELEASES = tuple(r.series for r in FOLLOWED)
"""The manager releases emulated, one per release folder
(policyspec.releases; 0.33 and 0.34: R9 and R10)."""


def release_for(api: str) -> str:
    """The manager release that drives a policy of API revision ``api``:
    0.34's for R10, 0.33's for every revision with request hooks before it
    (``protocols.manager_release``, which names the release in reports)."""
    from policyspec.protocols import manager_release
    from policyspec.releases import RELEASES as SHIPPED

    release = manager_release(api)
    return (release or SHIPPED[0]).series


@dataclass(slots=True)
class RequestCacheAccess:
    """The cache keys one request has met, kept in its ``ReqContext`` state
    (keyed by this type). ``owner`` and ``cache_generation`` make a record
    of another manager, or from before a ``reset_cache``, count as absent."""

    owner: object
    cache_generation: int
    key_groups: dict[int, list[Any]] = field(default_factory=dict)
    """Keys in the order first seen, by KV-cache group index."""
    seen_keys: set[Any] = field(default_factory=set)
    inserted_keys: set[Any] = field(default_factory=set)
    reused_keys: set[Any] = field(default_factory=set)
    store_miss_keys: set[Any] = field(default_factory=set)
    """Keys already reported to ``on_store_miss`` for this request."""
    counted_keys: set[Any] = field(default_factory=set)
    """0.34.0: keys this request has counted toward the store threshold."""
    finished: bool = False


class RefCntListener(Protocol):
    """Told of every ``ref_cnt`` write the manager makes, just before and
    just after it: ``chunk`` is the object written to (None before a new
    chunk is built, whose constructor writes -1)."""

    def before_write(self, key: Any, chunk: Any, new_ref_cnt: int) -> None: ...
    def after_write(self, key: Any, chunk: Any, new_ref_cnt: int) -> None: ...


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ManagerAssertionError(message)


class OffloadingManagerEmulation:
    """vLLM's ``CPUOffloadingManager`` of ``release`` (``RELEASES``) around a
    given policy object (spec/manager.md). ``chunk_type`` builds new chunks
    (vLLM's ``ChunkStatus`` layout; pass vLLM's own class to share its
    type). ``store_threshold`` of 2 or more turns the tracker on, as in
    vLLM."""

    def __init__(
        self,
        policy: Any,
        num_chunks: int,
        *,
        store_threshold: int = 1,
        max_tracker_size: int = 64_000,
        enable_events: bool = False,
        chunk_type: Callable[[int], Any] = ChunkStatus,
        listener: RefCntListener | None = None,
        release: str = FOLLOWED[0].series,
    ) -> None:
        if release not in RELEASES:
            raise ValueError(f"no emulation of vLLM {release}'s manager (emulated: "
                             f"{', '.join(RELEASES)})")
        self.release = release
        switches = next(r for r in FOLLOWED if r.series == release)
        self.touches = switches.manager_touches
        """Whether this release's manager has ``touch`` (0.33.0's)."""
        self.counts_once = switches.counts_once
        """0.34.0: the threshold counts a key once per request, and store
        events carry the request (spec/manager.md)."""
        self.policy = policy
        self.num_chunks = num_chunks
        self.store_threshold = store_threshold
        self.max_tracker_size = max_tracker_size
        self.chunk_type = chunk_type
        self.listener = listener
        self.num_allocated_chunks = 0
        """Chunk ids below this have been handed out since the last reset."""
        self.free_list: list[int] = []
        """Freed chunk ids, reused last in, first out."""
        self.num_evictable_chunks = 0
        self.num_write_pending_chunks = 0
        self.cache_generation = 0
        self.stores_skipped = 0
        self.events: list[ManagerEvent] | None = [] if enable_events else None
        self.offer_counts: OrderedDict[Any, int] | None = (
            OrderedDict() if store_threshold >= 2 else None
        )
        """The store-threshold tracker: offers per key, least recent first."""

    @property
    def lock(self) -> AbstractContextManager[Any]:
        """The CPU manager runs on one thread at a time by its callers' lock;
        its own is a no-op, as in vLLM."""
        return nullcontext()

    # -- ref_cnt writes -------------------------------------------------------

    def _write_ref_cnt(self, key: Any, chunk: Any, value: int) -> None:
        listener = self.listener
        if listener is not None:
            listener.before_write(key, chunk, value)
        chunk.ref_cnt = value
        if listener is not None:
            listener.after_write(key, chunk, value)

    # -- the chunk pool -------------------------------------------------------

    def num_free_chunks(self) -> int:
        return len(self.free_list) + self.num_chunks - self.num_allocated_chunks

    def _allocate(self, keys: list[Any]) -> list[Any]:
        """One new chunk per key, in flight (ref_cnt -1): never-used ids
        first, then freed ids, most recently freed first."""
        fresh = min(len(keys), self.num_chunks - self.num_allocated_chunks)
        _check(len(self.free_list) >= len(keys) - fresh, "the chunk pool ran dry")
        chunks = []
        for i, key in enumerate(keys):
            if i < fresh:
                chunk_id = self.num_allocated_chunks
                self.num_allocated_chunks += 1
            else:
                chunk_id = self.free_list.pop()
            chunks.append(self._new_chunk(key, chunk_id))
        return chunks

    def _new_chunk(self, key: Any, chunk_id: int) -> Any:
        """A chunk is born in flight: its constructor writes ref_cnt -1."""
        if self.listener is not None:
            self.listener.before_write(key, None, -1)
        chunk = self.chunk_type(chunk_id)
        if self.listener is not None:
            self.listener.after_write(key, chunk, -1)
        return chunk

    def _free(self, chunk: Any) -> None:
        self.free_list.append(chunk.chunk_id)

    # -- the store-threshold tracker -----------------------------------------

    def _count_offers(self, keys: list[Any], counted: Collection[Any]) -> None:
        """Count one offer of each key, except those in ``counted`` (0.34.0:
        counted by an earlier offer of the same request). Keys of this offer
        already tracked become most recent; new ones enter while there is
        room, making room by dropping the least recent key not offered now."""
        counts = self.offer_counts
        assert counts is not None
        offered = set()
        for key in keys:
            if key in counts:
                if key not in counted:
                    counts[key] += 1
                counts.move_to_end(key)
                offered.add(key)
        droppable = len(counts) - len(offered)
        for key in keys:
            if key in counts:
                continue
            if len(counts) >= self.max_tracker_size:
                if droppable == 0:
                    continue
                counts.popitem(last=False)
                droppable -= 1
            counts[key] = 1

    # -- request records ------------------------------------------------------

    def _is_current(self, record: RequestCacheAccess | None) -> bool:
        return (
            record is not None
            and record.owner is self
            and record.cache_generation == self.cache_generation
        )

    def request_record(self, req_context: Any) -> RequestCacheAccess:
        """The request's record for this manager and generation (a fresh one
        replaces a stale one)."""
        record: RequestCacheAccess | None = req_context.get_state(RequestCacheAccess)
        if record is None or not self._is_current(record):
            record = RequestCacheAccess(owner=self, cache_generation=self.cache_generation)
            req_context.set_state(record)
        return record

    def _note_access(
        self, keys: Iterable[Any], req_context: Any, reused: Iterable[Any] = ()
    ) -> None:
        """Record keys the request meets; keys met for the first time go to
        ``on_request_access`` as one list, in the order met. ``reused``
        keys count as reused unless the request inserted them itself."""
        record = self.request_record(req_context)
        first_seen = []
        for key in keys:
            if key in record.seen_keys:
                continue
            _check(not record.finished, "new cache keys observed after request finalization")
            record.key_groups.setdefault(get_offload_group_idx(key), []).append(key)
            record.seen_keys.add(key)
            first_seen.append(key)
        if first_seen:
            self.policy.on_request_access(first_seen, req_context)
        inserted = record.inserted_keys
        record.reused_keys.update(key for key in reused if key not in inserted)

    # -- the OffloadingManager interface --------------------------------------

    def on_new_request(self, req_context: Any) -> None:
        self.request_record(req_context)

    def lookup(self, key: Any, req_context: Any) -> Lookup:
        chunk = self.policy.get(key)
        if chunk is None:
            return Lookup.MISS
        return Lookup.HIT if chunk.is_ready else Lookup.HIT_PENDING

    def prepare_load(self, keys: Collection[Any], req_context: Any) -> list[int]:
        """Pin every key for a read (all must be ready); the chunk ids."""
        chunks = []
        for key in keys:
            chunk = self.policy.get(key)
            if chunk is None:
                raise ManagerAssertionError(f"chunk {key!r} not found in cache")
            if not chunk.is_ready:
                raise ManagerAssertionError(f"chunk {key!r} is not ready for reading")
            if chunk.ref_cnt == 0:
                self.policy.mark_non_evictable(key)
                self.num_evictable_chunks -= 1
                _check(self.num_evictable_chunks >= 0, "evictable count below 0")
            self._write_ref_cnt(key, chunk, chunk.ref_cnt + 1)
            chunks.append(chunk)
        self._note_access(keys, req_context, reused=keys)
        return [chunk.chunk_id for chunk in chunks]

    def touch(self, keys: Collection[Any], req_context: Any) -> None:
        if not self.touches:
            raise AttributeError(f"vLLM {self.release}'s CPUOffloadingManager has no touch")
        self.policy.touch(keys, req_context)

    def complete_load(self, keys: Collection[Any], req_context: Any) -> None:
        for key in keys:
            chunk = self.policy.get(key)
            if chunk is None:
                raise ManagerAssertionError(f"chunk {key!r} not found")
            if chunk.ref_cnt <= 0:
                raise ManagerAssertionError(f"chunk {key!r} ref_cnt is already 0")
            self._write_ref_cnt(key, chunk, chunk.ref_cnt - 1)
            if chunk.ref_cnt == 0:
                self.num_evictable_chunks += 1
                self.policy.mark_evictable(key)

    def prepare_store(self, keys: Collection[Any], req_context: Any) -> StoreOutput | None:
        """Make room for the offered keys that are not cached and insert
        them in flight; None when there is no room (spec/manager.md)."""
        offered = list(keys)
        record = self.request_record(req_context)
        counted: set[Any] = record.counted_keys if self.counts_once else set()
        if self.offer_counts is not None:
            self._count_offers(offered, counted)
        # Split before the threshold: ready cached keys are reuses whatever
        # the tracker says; the threshold only filters new candidates.
        missing: list[Any] = []
        ready: list[Any] = []
        for key in offered:
            chunk = self.policy.get(key)
            if chunk is None:
                missing.append(key)
            elif chunk.is_ready:
                ready.append(key)
        if self.offer_counts is not None:
            counts = self.offer_counts
            admitted = []
            for key in missing:
                if counts.get(key, 0) >= self.store_threshold:
                    admitted.append(key)
                elif key not in counted:
                    self.stores_skipped += 1
            missing = admitted
            if self.counts_once:
                counted.update(offered)

        new_misses = [key for key in missing if key not in record.store_miss_keys]
        if new_misses:
            # Before insert: an ARC learns from a ghost the insert erases.
            self.policy.on_store_miss(new_misses, req_context)
            record.store_miss_keys.update(new_misses)
        met = set(missing)
        met.update(ready)
        # Recorded before any early return below.
        self._note_access((key for key in offered if key in met), req_context, reused=ready)
        if not missing:
            return StoreOutput([], [], [])

        shortfall = len(missing) - self.num_free_chunks()
        evicted_keys: list[Any] = []
        if shortfall > 0:
            if shortfall > self.num_evictable_chunks:
                return None  # fast fail: evict could not succeed
            victims = self.policy.evict(shortfall, set(offered))
            if victims is None:
                return None
            self.num_evictable_chunks -= len(victims)
            _check(self.num_evictable_chunks >= 0, "evictable count below 0")
            for key, chunk in victims:
                self._free(chunk)
                evicted_keys.append(key)
        if evicted_keys and self.events is not None:
            self.events.append(ManagerEvent(evicted_keys, removed=True))

        chunks = self._allocate(missing)
        _check(len(chunks) == len(missing), "the pool allocated the wrong number of chunks")
        for key, chunk in zip(missing, chunks, strict=True):
            self.policy.insert(key, chunk, req_context)
        self.num_write_pending_chunks += len(missing)
        record.inserted_keys.update(missing)
        return StoreOutput(missing, [chunk.chunk_id for chunk in chunks], evicted_keys)

    def complete_store(
        self, keys: Collection[Any], req_context: Any, success: bool = True
    ) -> None:
        """End a store: on success the in-flight keys become idle; on failure
        they are removed and their chunks freed. Keys no longer in flight
        are left alone."""
        done: list[Any] = []
        for key in keys:
            chunk = self.policy.get(key)
            if chunk is None or chunk.is_ready:
                continue
            self.num_write_pending_chunks -= 1
            if success:
                self._write_ref_cnt(key, chunk, 0)
                self.num_evictable_chunks += 1
                self.policy.mark_evictable(key)
            else:
                self.policy.remove(key)
                self._free(chunk)
            done.append(key)
        if done and self.events is not None:
            if success and self.counts_once:
                self.events.append(ManagerEvent(done, removed=False, removal_expected=True,
                                                req_context=req_context))
            elif success:
                self.events.append(ManagerEvent(done, removed=False))
            else:
                self.events.append(ManagerEvent(done, removed=True, metadata_only=True))

    def call_hook(self, name: str, keys: list[Any], req_context: Any) -> None:
        """The policy's hook ``name(keys, req_context)``, one a later
        release's manager adds (its folder's ``manager.py`` calls it where
        that manager does). vLLM's base class gives every hook a default,
        so a policy object that has none gets no call."""
        hook = getattr(self.policy, name, None)
        if hook is not None:
            hook(keys, req_context)

    def on_request_finished(self, req_context: Any) -> None:
        """Hand the request's accesses to the policy, once per request and
        generation: its key groups by group index, each sorted head to tail
        when every key of the group has a position; the keys it only
        inserted; the keys it reused (the record's own set)."""
        record: RequestCacheAccess | None = req_context.get_state(RequestCacheAccess)
        if record is None or not self._is_current(record) or record.finished:
            return
        record.finished = True
        groups = []
        for index in sorted(record.key_groups):
            group = record.key_groups[index]
            positions = {}
            for key in group:
                position = req_context.get_offload_key_position(key)
                if position is not None:
                    positions[key] = position
            if len(positions) == len(group):
                group = sorted(group, key=positions.__getitem__)
            groups.append(tuple(group))
        self.policy.on_request_finished(
            tuple(groups),
            record.inserted_keys - record.reused_keys,
            record.reused_keys,
            req_context,
        )

    def reset_cache(self) -> None:
        """Drop every chunk; request records of older generations go stale.
        The store-threshold tracker keeps its counts, as in vLLM."""
        self.policy.clear()
        self.cache_generation += 1
        self.num_evictable_chunks = 0
        self.num_write_pending_chunks = 0
        self.free_list.clear()
        self.num_allocated_chunks = 0

    def take_events(self) -> Iterator[ManagerEvent]:
        """The events since the last call, lazily: a failed store's removal
        names only the keys still absent when the consumer reaches it."""
        if self.events is None:
            return
        events, self.events = self.events, []
        for event in events:
            if event.metadata_only:
                absent = [key for key in event.keys if self.policy.get(key) is None]
                if not absent:
                    continue
                event = ManagerEvent(absent, event.removed, metadata_only=True)
            yield event


@functools.cache
def emulation(release: str) -> type[OffloadingManagerEmulation]:
    """The emulated manager class of vLLM ``release`` (a series, ``0.35``;
    build it with ``release=`` the same): the ``Manager`` its release
    folder's ``manager.py`` defines, which adds the calls that release's
    manager makes (spec/drift.md), else ``OffloadingManagerEmulation``,
    which the folder's switches configure. ValueError for a release not
    followed, or a ``manager.py`` without such a ``Manager``."""
    found = next((r for r in FOLLOWED if r.series == release), None)
    if found is None:
        raise ValueError(f"no emulation of vLLM {release}'s manager (emulated: "
                         f"{', '.join(RELEASES)})")
    path = found.folder / "manager.py" if found.folder is not None else None
    if path is None or not path.is_file():
        return OffloadingManagerEmulation
    spec = importlib.util.spec_from_file_location(
        f"policyspec.releases.{path.parent.name}.manager", path)
    if spec is None or spec.loader is None:
        raise ValueError(f"{path}: cannot be loaded")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    manager = getattr(module, "Manager", None)
    if not (isinstance(manager, type) and issubclass(manager, OffloadingManagerEmulation)):
        raise ValueError(f"{path}: defines no Manager, a subclass of "
                         "policyspec.vllm.manager.OffloadingManagerEmulation")
    return manager
