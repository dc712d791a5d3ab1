"""faulty: LRU-MARK-RECENCY profile=lru

spec/bugs.md V8 as catalogued ("mark_evictable moves the key to the MRU end") is
the seed's own behaviour, which spec/lru.md specifies on purpose: appending
on mark is what LRU-MARK-RECENCY requires, and under the caller contract
``mark_evictable`` is never called on a key that is already idle, so no
variant of "append again" is reachable. The real fault in the V8 family is
a policy that claims the seed order but files a block that just became idle
(a store that completed, the last load that ended) somewhere other than the
most recent end. Here it goes to the least recent end, so the block a
request has just stored or read is the first to go, and an early prefix
block can go before its tail. The V8 "fix" (keep the place a block had
before its load) is correct under core and lives in
tests/correct/true_recency_lru.py.
"""

from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def mark_evictable(self, key: Any) -> None:
        self.evictable_blocks[key] = None
        self.evictable_blocks.move_to_end(key, last=False)  # the fault: least recent end
