"""faulty: HOOK-TOTAL engine=stateful

A request-ranked LRU whose ``on_request_finished`` re-files each present
key by taking it out of the idle list and putting it back, which raises
KeyError for a key that is not idle. A request may finish while its stores
are still in flight (their completions arrive later) or while a chunk it
read is pinned by another reader: the hook must accept such keys.
"""

from collections.abc import Collection, Sequence
from typing import Any

from policyspec.reference.lru033 import LRU033CachePolicy


class Policy(LRU033CachePolicy[Any, Any]):
    def on_request_finished(
        self,
        key_groups: Sequence[Sequence[Any]],
        insertion_only_keys: Collection[Any],
        reused_keys: Collection[Any],
        req_context: Any,
    ) -> None:
        super().on_request_finished(key_groups, insertion_only_keys, reused_keys, req_context)
        for group in key_groups:
            for key in group:
                if key in self.chunks:
                    self.mark_non_evictable(key)  # the fault: KeyError unless idle
                    self.mark_evictable(key)
