"""faulty: ARC-EVICT-GHOSTS profile=arc engine=fast capacity=4 budget=10

Re-creates spec/bugs.md V6 (vLLM PR #27039 review): the ARC manager bounded its
ghost lists and its target by a constant 10000 instead of the backend's
capacity, so on a small cache the ghosts grow far past it and the target
learns from long-gone traffic. Here ``cache_capacity`` is kept for the
caller but ghosts and target use the constant. A ghost list outgrows the
capacity only once more keys than the capacity are absent at once: the
engines get there with a few blocks, never with 64 (their key pools are 48
keys, or 1.5 times the capacity, and keep the cache nearly full). The
witness holds more evicted keys than the capacity, so it grows with it:
``capacity=4`` keeps it under 25 steps (at 8 it needs about 30).
"""

from typing import Any

from policyspec.reference.arc import ARCCachePolicy

BOUND = 10000


class Policy(ARCCachePolicy[Any, Any]):
    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.real_capacity = cache_capacity

    def _grow_target(self) -> None:
        step = max(1, len(self.b2) / len(self.b1))
        self.target_t1_size = min(self.target_t1_size + step, BOUND)  # the fault

    def _commit(self, picks: list[tuple[Any, Any, bool]]) -> list[tuple[Any, Any]]:
        self.cache_capacity = BOUND  # the fault: ghosts trimmed to the constant
        try:
            return super()._commit(picks)
        finally:
            self.cache_capacity = self.real_capacity
