"""faulty: ARC-INSERT-T1 profile=arc engine=stateful also=ARC-STORE-MISS-ADAPT capacity=16 budget=30

vLLM 0.33.0's ARC learning from a ghost hit in ``insert`` (just before it
erases the ghost) instead of in ``on_store_miss``. The manager evicts
between the two calls, so the eviction that makes room for the returning
key still sees the old target: ARC picks the victim from the list the
ghost hit says to spare. Two ids are broken: the insert that adapts
(ARC-INSERT-T1) and the store miss that does not (ARC-STORE-MISS-ADAPT);
the shortest witness, found again at capacity 8, shows the insert. The stateful
engine needs an eviction that makes a ghost, its key stored again and a
later eviction the target decides: at capacity 16 that comes up within
seconds when the machine is idle, and the corpus test gives it 30 (CI's
machine is not) at that capacity (``capacity=16``: left to choose, the
stateful engine alone spends part of its time at larger capacities, where
this takes longer to come up).
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
