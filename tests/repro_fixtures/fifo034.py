"""Two FIFO policies written for vLLM 0.34 (API R10: ``insert`` takes the
storing request's ``req_context``, ``on_request_finished`` is the only
finish, there is no ``touch``): ``FIFO034`` keeps insertion order, and
``MarkMovesKey`` has a deliberate order fault, a completed store or load
(``mark_evictable``) moving its key to the newest end, which breaks
FIFO-ORDER-KEPT. tests/test_repro_shown.py checks the fault's snippet.
"""

from collections.abc import Collection, Sequence
from typing import Any


class FIFO034:
    def __init__(self, cache_capacity: int) -> None:
        self.cache_capacity = cache_capacity
        self.chunks: dict[Any, Any] = {}  # insertion order is the eviction order
        self.idle: set[Any] = set()

    def get(self, key: Any) -> Any:
        return self.chunks.get(key)

    def insert(self, key: Any, chunk: Any, req_context: Any) -> None:
        self.chunks[key] = chunk
        if chunk.ref_cnt == 0:
            self.idle.add(key)

    def remove(self, key: Any) -> None:
        del self.chunks[key]
        self.idle.discard(key)

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        victims = [k for k in self.chunks if k in self.idle and k not in protected][:n]
        if len(victims) < n:
            return None
        for key in victims:
            self.idle.discard(key)
        return [(key, self.chunks.pop(key)) for key in victims]

    def clear(self) -> None:
        self.chunks.clear()
        self.idle.clear()

    def on_request_finished(
        self, key_groups: Sequence[Sequence[Any]], insertion_only_keys: Collection[Any],
        reused_keys: Collection[Any], req_context: Any,
    ) -> None:
        pass  # a FIFO ignores recency

    def mark_evictable(self, key: Any) -> None:
        self.idle.add(key)

    def mark_non_evictable(self, key: Any) -> None:
        self.idle.discard(key)


class MarkMovesKey(FIFO034):
    def mark_evictable(self, key: Any) -> None:
        self.chunks[key] = self.chunks.pop(key)  # the fault: the key becomes the newest
        super().mark_evictable(key)
