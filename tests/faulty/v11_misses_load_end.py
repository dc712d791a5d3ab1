"""faulty: MARK-EVICTABLE-ELIGIBLE profile=lru

Re-creates spec/bugs.md V11 (vllm PR #45757) on the policy side, and the pin
imbalance of LMCache (L2): correctness rests on every transition to idle
being reported and honoured. This policy honours ``mark_evictable`` only
for a store that completes (a key it has never seen idle) and misses the
end of a load, so a block that was read once never becomes eligible again:
stores fail although the manager's idle counter says they can succeed.
``mark_non_evictable`` is tolerant (pop) so that the fault does not surface
as an exception.

Profile lru: under core a policy may refuse any store (EVICT-LIVENESS is a
SHOULD), so a block that never becomes eligible cannot be told apart from an
admission gate; the lru profile makes the refusal or the other victims a
MUST failure.
"""

from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.was_idle: set[Any] = set()

    def insert(self, key: Any, block: Any) -> None:
        super().insert(key, block)
        self.was_idle.discard(key)
        if block.ref_cnt == 0:
            self.was_idle.add(key)

    def mark_evictable(self, key: Any) -> None:
        if key in self.was_idle:
            return  # the fault: the end of a load is not a transition to idle
        self.was_idle.add(key)
        self.evictable_blocks[key] = None

    def mark_non_evictable(self, key: Any) -> None:
        self.evictable_blocks.pop(key, None)
