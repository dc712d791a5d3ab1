"""faulty: GET-PURE engine=metamorphic

Risk pattern 5 of spec/contract.md (side effects in ``get``): the
policy counts a lookup as a use and moves an idle key to the most recent
end. The manager calls ``get`` for its own bookkeeping on every store, load
and lookup, so the eviction order follows the manager's bookkeeping rather
than the requests. Presence never changes, so only a comparison of runs with
and without extra ``get`` calls (the metamorphic engine) shows it under core.
"""

from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def get(self, key: Any) -> Any:
        if key in self.evictable_blocks:
            self.evictable_blocks.move_to_end(key)  # the fault
        return self.blocks.get(key)
