"""The reference request-ranked LRU of vLLM 0.33.0 (profile ``lru-0.33``):
0.34.0's (``lru034``) plus ``touch``, which 0.33.0 still has. A touch, and
a store miss (0.33.0's base class forwards ``on_store_miss`` to ``touch``),
give the present keys fresh ranks from the last key to the first.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import TypeVar

from policyspec.reference.lru034 import ChunkLike, LRU034CachePolicy, RequestRank
from policyspec.reference.requests import RequestContextLike

__all__ = ["ChunkLike", "LRU033CachePolicy", "RequestRank"]

K = TypeVar("K", bound=Hashable)
C = TypeVar("C", bound=ChunkLike)


class LRU033CachePolicy(LRU034CachePolicy[K, C]):
    """vLLM 0.33.0's LRU: 0.34.0's with ``touch`` (module doc)."""

    def touch(self, keys: Iterable[K], req_context: RequestContextLike) -> None:
        # Tail first, so the head of the list ends most recent.
        self._refresh(reversed(list(keys)))

    def on_store_miss(self, keys: Iterable[K], req_context: RequestContextLike) -> None:
        # vLLM 0.33.0's default: a touch (which ignores the absent keys).
        self.touch(keys, req_context)
