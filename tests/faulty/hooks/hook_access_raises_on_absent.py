"""faulty: HOOK-TOTAL engine=stateful

A request-ranked LRU whose ``on_request_access`` reads each key's rank
before asking whether the key is present. vLLM 0.33.0's manager reports a
request's first-seen keys before it inserts the missing ones, so the first
store of a new key raises KeyError (the hook must accept absent keys).
"""

from collections.abc import Iterable
from typing import Any

from policyspec.reference.lru033 import LRU033CachePolicy


class Policy(LRU033CachePolicy[Any, Any]):
    def on_request_access(self, keys: Iterable[Any], req_context: Any) -> None:
        request = self.request_rank(req_context)
        for key in keys:
            current = self.ranks[key]  # the fault: KeyError for a key not yet stored
            position = req_context.get_offload_key_position(key)
            if position is not None and current < (request, -position):
                self._rerank(key, (request, -position))
