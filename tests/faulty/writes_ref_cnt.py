"""faulty: BLOCK-NO-WRITE engine=stateful

Synthetic mutant (the policy never writes ``ref_cnt``): ``mark_non_evictable``
"helps" the manager by raising the block's ``ref_cnt`` to 1 itself. The
manager then raises it again, and its count of readers is off by one, so
the block never returns to idle.

Engine: the write is only visible between ``mark_non_evictable`` and the
manager's own write of 1 right after it, which the stateful engine checks
after every call; the fast engine compares fields after whole actions.
"""

from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def mark_non_evictable(self, key: Any) -> None:
        super().mark_non_evictable(key)
        self.blocks[key].ref_cnt = 1  # the fault
