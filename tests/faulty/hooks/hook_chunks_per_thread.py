"""faulty: API-ANY-THREAD engine=stateful

A request-ranked LRU whose table of present chunks is thread-local: each
thread sees only the chunks inserted on it. vLLM 0.33.0 calls a policy from
two threads (serialized under the manager's lock; its tiering poll thread
reaches ``get`` and the pin calls), so a chunk stored from one thread is
absent to the other: ``get`` returns None for a key that is present.
"""

import threading
from typing import Any

from policyspec.reference.lru033 import LRU033CachePolicy


class Policy(LRU033CachePolicy[Any, Any]):
    def __init__(self, cache_capacity: int) -> None:
        self.local = threading.local()
        super().__init__(cache_capacity)

    @property  # type: ignore[override]
    def chunks(self) -> dict[Any, Any]:
        table: dict[Any, Any] | None = getattr(self.local, "chunks", None)
        if table is None:
            table = self.local.chunks = {}  # the fault: one table per thread
        return table

    @chunks.setter
    def chunks(self, value: dict[Any, Any]) -> None:
        self.local.chunks = value
