"""The reference request-ranked LRU of vLLM 0.34.0 (profile ``lru-0.34``):
the in-tree LRU's behaviour (spec/lru033.md; spec/contract.md, R10),
written from its facts with structures of its own, so that the model has
an independent implementation to be held against. vLLM 0.33.0's
(``lru033``) is this one plus ``touch``.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from policyspec.reference.requests import RequestContextLike, head_to_tail

__all__ = ["ChunkLike", "LRU034CachePolicy", "RequestRank"]


class ChunkLike(Protocol):
    """vLLM's ``ChunkStatus`` as the policy reads it (``ref_cnt`` only)."""

    @property
    def ref_cnt(self) -> int: ...


K = TypeVar("K", bound=Hashable)
C = TypeVar("C", bound=ChunkLike)
Rank = tuple[int, int]


@dataclass(slots=True)
class RequestRank:
    """One request's rank, kept in its ``ReqContext``: valid only for the
    policy that made it and the cache generation it was made in."""

    owner: object
    generation: int
    rank: int


class LRU034CachePolicy(Generic[K, C]):
    """Least recent rank first over idle chunks (spec/lru033.md).

    ``chunks`` holds every present key, ``ranks`` each present key's rank,
    ``idle`` the idle keys as ``(rank, key)`` pairs in ascending order (the
    eviction order; equal ranks, as keys of two KV groups at one position,
    fall back on the keys' own order).
    """

    def __init__(self, cache_capacity: int) -> None:
        self.cache_capacity = cache_capacity
        self.chunks: dict[K, C] = {}
        self.ranks: dict[K, Rank] = {}
        self.idle: list[tuple[Rank, K]] = []
        self._idle_keys: set[K] = set()
        self.clock = 0
        """The last rank handed out; ranks only grow until ``clear``."""
        self.generation = 0

    # -- ranks ------------------------------------------------------------------

    def _tick(self) -> int:
        self.clock += 1
        return self.clock

    def request_rank(self, req_context: RequestContextLike) -> int:
        """The request's rank, made on first use in this generation."""
        state = req_context.get_state(RequestRank)
        if (
            not isinstance(state, RequestRank)
            or state.owner is not self
            or state.generation != self.generation
        ):
            state = RequestRank(self, self.generation, self._tick())
            req_context.set_state(state)
        return state.rank

    def _rerank(self, key: K, rank: Rank) -> None:
        if key in self._idle_keys:
            old = (self.ranks[key], key)
            del self.idle[bisect_left(self.idle, old)]
            insort(self.idle, (rank, key))
        self.ranks[key] = rank

    def _refresh(self, keys: Iterable[K]) -> None:
        """Fresh ranks, in order, for the keys that are present."""
        for key in keys:
            if key in self.chunks:
                self._rerank(key, (self._tick(), 0))

    # -- the CachePolicy API ----------------------------------------------------

    def get(self, key: K) -> C | None:
        return self.chunks.get(key)

    def insert(self, key: K, chunk: C, req_context: RequestContextLike) -> None:
        position = req_context.get_offload_key_position(key)
        if position is None:
            rank = (self._tick(), 0)
        else:
            rank = (self.request_rank(req_context), -position)
        self.chunks[key] = chunk
        self._rerank(key, rank)
        if chunk.ref_cnt == 0:
            self.mark_evictable(key)

    def remove(self, key: K) -> None:
        del self.chunks[key]  # KeyError when absent, as vLLM's
        self._forget(key)

    def _forget(self, key: K) -> None:
        if key in self._idle_keys:
            self.mark_non_evictable(key)
        self.ranks.pop(key, None)

    def on_store_miss(self, keys: Iterable[K], req_context: RequestContextLike) -> None:
        # 0.34.0's default: nothing (the keys are absent; recency waits for
        # the request's finish).
        return None

    def on_request_access(self, keys: Iterable[K], req_context: RequestContextLike) -> None:
        """Raise each present, positioned key to the request's rank; never
        lower one (a later request's rank, or a fresh rank, stays)."""
        request = self.request_rank(req_context)
        for key in keys:
            position = req_context.get_offload_key_position(key)
            if position is None or key not in self.chunks:
                continue
            rank = (request, -position)
            if self.ranks[key] < rank:
                self._rerank(key, rank)

    def on_request_finished(
        self,
        key_groups: Sequence[Sequence[K]],
        insertion_only_keys: Collection[K],
        reused_keys: Collection[K],
        req_context: RequestContextLike,
    ) -> None:
        """Commit the request's recency: fresh ranks from tail to head."""
        self._refresh(reversed(head_to_tail(key_groups, req_context)))

    def evict(self, n: int, protected: Collection[K]) -> list[tuple[K, C]] | None:
        """The ``n`` idle, unprotected keys of least rank, least first; or
        None, changing nothing, when there are fewer."""
        if n == 0:
            return []
        picked: list[int] = []
        for index, (_, key) in enumerate(self.idle):
            if key not in protected:
                picked.append(index)
                if len(picked) == n:
                    break
        else:
            return None
        victims = [self.idle[i][1] for i in picked]
        for index in reversed(picked):
            del self.idle[index]
        result = []
        for key in victims:
            self._idle_keys.discard(key)
            del self.ranks[key]
            result.append((key, self.chunks.pop(key)))
        return result

    def clear(self) -> None:
        """Forget every chunk and rank; ranks kept by requests go stale."""
        self.chunks.clear()
        self.ranks.clear()
        self.idle.clear()
        self._idle_keys.clear()
        self.clock = 0
        self.generation += 1

    def mark_evictable(self, key: K) -> None:
        """Idle again, with the rank the key already has (KeyError when the
        key is absent)."""
        if key not in self._idle_keys:
            insort(self.idle, (self.ranks[key], key))
            self._idle_keys.add(key)

    def mark_non_evictable(self, key: K) -> None:
        """No longer idle (KeyError when the key is not idle, as vLLM's)."""
        self._idle_keys.remove(key)
        del self.idle[bisect_left(self.idle, (self.ranks[key], key))]
