"""faulty: HOOK-KEEPS-MEMBERSHIP engine=stateful,vllm-manager also=EVICT-IDLE-ONLY,MANAGER-NO-LOST-DATA

A vLLM 0.34 LRU whose ``on_request_access`` makes every present key it
names eligible for eviction, as if a request seeing a key meant it was
idle. A request that stores a key reports it to ``on_request_access`` while
the key's store is still in flight (ref_cnt -1), so the next eviction can
take a chunk that request is still writing: the KV data it stores is lost
while the request runs. The call that causes it is the hook, which must not
change eligibility; the evictions that follow break EVICT-IDLE-ONLY (and,
under vLLM's manager, MANAGER-NO-LOST-DATA).
"""

from collections.abc import Iterable
from typing import Any

from policyspec.reference.lru034 import LRU034CachePolicy


class Policy(LRU034CachePolicy[Any, Any]):
    def on_request_access(self, keys: Iterable[Any], req_context: Any) -> None:
        keys = list(keys)
        super().on_request_access(keys, req_context)
        for key in keys:
            if key in self.chunks:
                self.mark_evictable(key)  # the fault: whatever its ref_cnt
