"""faulty: EVICT-IDLE-ONLY

Synthetic mutant (spec/sources.md C2, I3): ``insert`` files every new key in the idle list,
ignoring ``ref_cnt == -1``, so a store still in flight can be chosen as a
victim before ``mark_evictable`` says it completed.

Expected id: the fault lives in ``insert`` and its spec text is
INSERT-IN-FLIGHT-NOT-ELIGIBLE, but it can only be observed through an evict
whose victim is in flight, and an evict outcome with a victim that is not
idle is reported as EVICT-IDLE-ONLY (spec/evict.md lists the order in which
outcomes are judged). No black-box run tells this policy from
v09_evicts_in_flight_first.py, whose fault lives in ``evict``; the suite
reports both under EVICT-IDLE-ONLY.
"""

from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def insert(self, key: Any, block: Any) -> None:
        self.blocks[key] = block
        self.evictable_blocks[key] = None  # the fault: no ref_cnt test
