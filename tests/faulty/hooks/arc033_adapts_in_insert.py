"""faulty: ARC-STORE-MISS-ADAPT profile=arc engine=stateful also=ARC-INSERT-T1 capacity=16 budget=30

vLLM 0.33.0's ARC learning from a ghost hit in ``insert`` (just before it
erases the ghost) instead of in ``on_store_miss``. The manager evicts
between the two calls, so the eviction that makes room for the returning
key still sees the old target: ARC picks the victim from the list the
ghost hit says to spare. Two ids are broken: the insert that adapts
(ARC-INSERT-T1) and the store miss that does not (ARC-STORE-MISS-ADAPT);
the shortest witness (12 steps at seed 0) shows the store miss. The
stateful engine needs an eviction that makes a ghost, its key stored again
and a later eviction the target decides: at capacity 16 that comes up
within the corpus test's 30 work units (``capacity=16``: left to choose,
the stateful engine spends part of its work at larger capacities, where
it comes up later).
"""

from collections.abc import Iterable
from typing import Any

from policyspec.reference.arc import ARCCachePolicy


class Policy(ARCCachePolicy[Any, Any]):
    def on_store_miss(self, keys: Iterable[Any], req_context: Any) -> None:
        return None

    def insert(self, key: Any, chunk: Any, req_context: Any) -> None:
        self._ghost_hit(key)  # the fault: after the eviction, not before it
        super().insert(key, chunk, req_context)
