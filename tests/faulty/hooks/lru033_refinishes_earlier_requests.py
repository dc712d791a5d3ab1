"""faulty: LRU033-FINISH-COMMIT profile=lru-0.33 engine=stateful

The request-ranked LRU that never retires a finished request: each finish
commits the request's recency, then applies every earlier finish again, so
the keys of requests that finished long ago become the most recent at every
later finish (the manager finishes each request once; so must the policy).
"""

from collections.abc import Collection, Sequence
from typing import Any

from policyspec.reference.lru033 import LRU033CachePolicy
from policyspec.reference.requests import head_to_tail


class Policy(LRU033CachePolicy[Any, Any]):
    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.finished: list[list[Any]] = []

    def on_request_finished(
        self,
        key_groups: Sequence[Sequence[Any]],
        insertion_only_keys: Collection[Any],
        reused_keys: Collection[Any],
        req_context: Any,
    ) -> None:
        keys = head_to_tail(key_groups, req_context)
        self._refresh(reversed(keys))
        for earlier in self.finished:  # the fault: earlier finishes applied again
            self._refresh(reversed(earlier))
        self.finished.append(keys)

    def clear(self) -> None:
        super().clear()
        self.finished.clear()
