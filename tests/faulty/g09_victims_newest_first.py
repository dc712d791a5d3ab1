"""faulty: LRU-EVICT-ORDER profile=lru

Re-creates the order half of spec/bugs.md G9 (NVIDIA/Megatron-LM PR #5822,
parent blocks evicted before their children): ``evict`` picks the right n
victims but returns them most recent first. The manager reports removals in
the returned order, so a prefix chain is cut from the wrong end first.
"""

from collections.abc import Collection
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        victims = super().evict(n, protected)
        return None if victims is None else victims[::-1]  # the fault: newest first
