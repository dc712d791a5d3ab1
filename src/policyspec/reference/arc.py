"""The reference ARC: vLLM's in-tree ARC behaviour (spec/arc.md), made fast:
``ARC034CachePolicy`` at vLLM 0.34.0's API (R10, profile ``arc-0.34``) and
``ARCCachePolicy`` at 0.33.0's (R9, the same plus ``touch``, profile ``arc``).
Written from the spec, independent of ``policyspec.model`` (the model is
its oracle). One ``evict(n)`` walks T1 and T2 once each, never a rescan per
victim (spec/bugs.md, V5).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from policyspec.reference.lru034 import ChunkLike
from policyspec.reference.requests import RequestContextLike, head_to_tail

__all__ = ["ARC034CachePolicy", "ARCCachePolicy"]

K = TypeVar("K")
B = TypeVar("B", bound=ChunkLike)


class ARC034CachePolicy(Generic[K, B]):
    """Adaptive Replacement Cache over idle blocks, as vLLM 0.34.0's.

    ``t1`` holds blocks stored once, ``t2`` blocks a request reused while
    ready (both key -> block, least recent first); ``b1`` and ``b2`` remember the
    keys last evicted from each (ghosts, at most ``cache_capacity`` each);
    ``target_t1_size`` is the adaptive size ARC aims at for T1. A block is
    eligible for eviction exactly when its ``ref_cnt`` is 0, so
    ``mark_evictable`` and ``mark_non_evictable`` have nothing to do.
    """

    def __init__(self, cache_capacity: int) -> None:
        self.cache_capacity = cache_capacity
        self.target_t1_size: float = 0.0
        self.t1: OrderedDict[K, B] = OrderedDict()
        self.t2: OrderedDict[K, B] = OrderedDict()
        self.b1: OrderedDict[K, None] = OrderedDict()
        self.b2: OrderedDict[K, None] = OrderedDict()

    def get(self, key: K) -> B | None:
        block = self.t1.get(key)
        return self.t2.get(key) if block is None else block

    def insert(self, key: K, chunk: B, req_context: Any) -> None:
        # A returning key is a new T1 entry; it stops being a ghost.
        self.t1[key] = chunk
        self.b1.pop(key, None)
        self.b2.pop(key, None)

    def remove(self, key: K) -> None:
        # Undoes a failed store: the key simply disappears, leaving no ghost.
        if self.t1.pop(key, None) is None:
            self.t2.pop(key, None)

    def _ghost_hit(self, key: K) -> None:
        """A key met again after its eviction: move the target towards the
        list it was evicted from."""
        if key in self.b1:
            self._grow_target()
            self.b1.move_to_end(key)
        elif key in self.b2:
            self._shrink_target()
            self.b2.move_to_end(key)

    def on_store_miss(self, keys: Iterable[K], req_context: Any) -> None:
        # Before the insert that erases the ghost; last key first, as touch.
        for key in reversed(list(keys)):
            self._ghost_hit(key)

    def on_request_access(self, keys: Iterable[K], req_context: Any) -> None:
        # Frequency is counted once, when the request finishes.
        return None

    def on_request_finished(
        self,
        key_groups: Sequence[Sequence[K]],
        insertion_only_keys: Collection[K],
        reused_keys: Collection[K],
        req_context: RequestContextLike,
    ) -> None:
        """Tail to head: a chunk the request reused (ready when it read it)
        is one more access, T1 -> T2 or most recent in T2; a chunk it only
        inserted is refreshed in its own list; other keys are left alone."""
        t1, t2 = self.t1, self.t2
        for key in reversed(head_to_tail(key_groups, req_context)):
            if key in insertion_only_keys:
                if key in t1:
                    t1.move_to_end(key)
                elif key in t2:
                    t2.move_to_end(key)
            elif key in reused_keys:
                block = t1.pop(key, None)
                if block is not None:
                    t2[key] = block
                elif key in t2:
                    t2.move_to_end(key)

    def _grow_target(self) -> None:
        # A B1 ghost hit: T1 was evicted too early.
        step = max(1, len(self.b2) / len(self.b1))
        self.target_t1_size = min(self.target_t1_size + step, self.cache_capacity)

    def _shrink_target(self) -> None:
        # A B2 ghost hit: T2 was evicted too early.
        step = max(1, len(self.b1) / len(self.b2))
        self.target_t1_size = max(self.target_t1_size - step, 0)

    def evict(self, n: int, protected: Collection[K]) -> list[tuple[K, B]] | None:
        if n == 0:
            return []
        if n > len(self.t1) + len(self.t2):
            return None
        # Choose first, commit after: a None leaves every structure untouched.
        recent = _Cursor(self.t1, protected)
        frequent = _Cursor(self.t2, protected)
        floor = int(self.target_t1_size)
        t1_left = len(self.t1)
        picks: list[tuple[K, B, bool]] = []
        while len(picks) < n:
            source, other = (recent, frequent) if t1_left >= floor else (frequent, recent)
            found = source.next()
            if found is None:
                source = other
                found = source.next()
                if found is None:
                    return None
            from_t1 = source is recent
            if from_t1:
                t1_left -= 1
            picks.append((*found, from_t1))
        return self._commit(picks)

    def _commit(self, picks: list[tuple[K, B, bool]]) -> list[tuple[K, B]]:
        for key, _, from_t1 in picks:
            if from_t1:
                del self.t1[key]
                self.b1[key] = None
            else:
                del self.t2[key]
                self.b2[key] = None
        for ghosts in (self.b1, self.b2):
            for _ in range(len(ghosts) - self.cache_capacity):
                ghosts.popitem(last=False)
        return [(key, block) for key, block, _ in picks]

    def clear(self) -> None:
        self.t1.clear()
        self.t2.clear()
        self.b1.clear()
        self.b2.clear()
        self.target_t1_size = 0.0

    def mark_evictable(self, key: K) -> None:
        # Eligibility is read from ref_cnt at eviction time.
        return None

    def mark_non_evictable(self, key: K) -> None:
        return None


class _Cursor(Generic[K, B]):
    """A forward-only walk over one resident list that yields its idle,
    unprotected entries, least recent first. Entries it passes over stay
    ineligible for the rest of the eviction, so it never looks back."""

    __slots__ = ("_entries", "_protected")

    def __init__(self, entries: OrderedDict[K, B], protected: Collection[K]) -> None:
        self._entries: Iterator[tuple[K, B]] = iter(entries.items())
        self._protected = protected

    def next(self) -> tuple[K, B] | None:
        """The next candidate, or None once the list is used up."""
        for key, block in self._entries:
            if block.ref_cnt == 0 and key not in self._protected:
                return key, block
        return None


class ARCCachePolicy(ARC034CachePolicy[K, B]):
    """vLLM 0.33.0's ARC: 0.34.0's plus ``touch``, a second access of every
    key it names (T1 -> T2 while ready) and a ghost hit for the departed."""

    def touch(self, keys: Iterable[K], req_context: Any) -> None:
        # Last key first, so the head of a prefix ends up most recent.
        ordered = keys if isinstance(keys, list | tuple) else list(keys)
        t1, t2 = self.t1, self.t2
        for key in reversed(ordered):
            block = t1.get(key)
            if block is not None:
                if block.ref_cnt >= 0:
                    # Seen again while ready: promote to the frequent list.
                    del t1[key]
                    t2[key] = block
                else:
                    # Still being stored: not a second access, only recency.
                    t1.move_to_end(key)
            elif key in t2:
                t2.move_to_end(key)
            else:
                self._ghost_hit(key)
