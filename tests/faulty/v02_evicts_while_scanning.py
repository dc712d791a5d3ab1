"""faulty: EVICT-ATOMIC

Re-creates spec/bugs.md V2 (vLLM's ARC before PR #37874) and risk pattern 2
of spec/contract.md: each candidate is deleted from the policy as soon as
the scan finds it, and when the idle keys run out before n victims are
found, ``evict`` returns None. The victims taken so far are gone although
the caller was told that nothing happened.
"""

from collections.abc import Collection
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        victims: list[tuple[Any, Any]] = []
        for key in list(self.evictable_blocks):
            if key in protected:
                continue
            del self.evictable_blocks[key]  # the fault: deleted before success is known
            victims.append((key, self.blocks.pop(key)))
            if len(victims) == n:
                return victims
        return None
