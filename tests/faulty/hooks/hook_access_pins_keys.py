"""faulty: HOOK-KEEPS-MEMBERSHIP engine=stateful

A request-ranked LRU that holds the idle chunks a request accesses out of
eviction until the request finishes ("in use by a request"). Eligibility is
the manager's to say (ref_cnt, mark_evictable / mark_non_evictable): an
idle, unprotected chunk that ``evict`` will not give up makes the manager's
store fail although its count of idle chunks says it can succeed.
"""

from collections.abc import Collection, Iterable, Sequence
from typing import Any

from policyspec.reference.lru033 import LRU033CachePolicy


class Policy(LRU033CachePolicy[Any, Any]):
    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.held: dict[str, list[Any]] = {}

    def on_request_access(self, keys: Iterable[Any], req_context: Any) -> None:
        keys = list(keys)
        super().on_request_access(keys, req_context)
        for key in keys:
            if key in self._idle_keys:
                self.mark_non_evictable(key)  # the fault: eligibility changed by a hook
                self.held.setdefault(req_context.req_id, []).append(key)

    def on_request_finished(
        self,
        key_groups: Sequence[Sequence[Any]],
        insertion_only_keys: Collection[Any],
        reused_keys: Collection[Any],
        req_context: Any,
    ) -> None:
        super().on_request_finished(key_groups, insertion_only_keys, reused_keys, req_context)
        for key in self.held.pop(req_context.req_id, []):
            if key in self.chunks:
                self.mark_evictable(key)
