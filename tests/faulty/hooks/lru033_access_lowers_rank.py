"""faulty: LRU033-ACCESS-RANK profile=lru-0.33 engine=stateful budget=30

The request-ranked LRU whose ``on_request_access`` sets every present,
positioned key to the accessing request's rank, even when the key already
has a newer one: a request that started early and reads a chunk stored by
a later request makes that chunk older (0.33 raises ranks, never lowers
them).
"""

from collections.abc import Iterable
from typing import Any

from policyspec.reference.lru033 import LRU033CachePolicy


class Policy(LRU033CachePolicy[Any, Any]):
    def on_request_access(self, keys: Iterable[Any], req_context: Any) -> None:
        request = self.request_rank(req_context)
        for key in keys:
            position = req_context.get_offload_key_position(key)
            if position is not None and key in self.chunks:
                self._rerank(key, (request, -position))  # the fault: no comparison
