"""faulty: LRU033-FINISH-COMMIT profile=lru-0.34 engine=stateful,vllm-manager

vLLM 0.34.0's LRU committing a finished request's recency one KV-cache group
at a time (each group tail first, the groups in turn) instead of over
``order_request_keys``, the one head-to-tail order across every group. Where
a request's keys in two groups share positions (a sliding-window group holds
the tail again), the last group's keys all end more recent than the first
group's heads, so the heads of the first group are evicted before tails of
the second. In 0.34 the finish is the only place recency is committed.
"""

from collections.abc import Collection, Sequence
from typing import Any

from policyspec.reference.lru034 import LRU034CachePolicy
from policyspec.reference.requests import head_to_tail


class Policy(LRU034CachePolicy[Any, Any]):
    def on_request_finished(
        self,
        key_groups: Sequence[Sequence[Any]],
        insertion_only_keys: Collection[Any],
        reused_keys: Collection[Any],
        req_context: Any,
    ) -> None:
        for group in key_groups:  # the fault: not one order across the groups
            self._refresh(reversed(head_to_tail((group,), req_context)))
