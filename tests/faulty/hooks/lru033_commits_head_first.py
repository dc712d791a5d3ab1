"""faulty: LRU033-FINISH-COMMIT profile=lru-0.33 engine=stateful

The request-ranked LRU of vLLM 0.33.0 with its finish committed the wrong
way round: fresh ranks from head to tail, so the tail of a finished
request's prefix ends most recent and its head is evicted first (0.33
commits tail first, so a prefix's tail goes before its head).
"""

from collections.abc import Collection, Sequence
from typing import Any

from policyspec.reference.lru033 import LRU033CachePolicy
from policyspec.reference.requests import head_to_tail


class Policy(LRU033CachePolicy[Any, Any]):
    def on_request_finished(
        self,
        key_groups: Sequence[Sequence[Any]],
        insertion_only_keys: Collection[Any],
        reused_keys: Collection[Any],
        req_context: Any,
    ) -> None:
        self._refresh(head_to_tail(key_groups, req_context))  # the fault: not reversed
