"""faulty: ARC-FINISH-REUSE profile=arc-0.34 engine=stateful

vLLM 0.34.0's ARC counting a store as an access: at a request's finish the
keys it only inserted are promoted from T1 to T2 like the keys it reused.
With touch gone, the finish is where 0.34's ARC counts frequency, once per
request and only for reuse of a ready chunk; this one fills T2 with chunks
seen once and evicts from T2 what it should keep.
"""

from collections.abc import Collection, Sequence
from typing import Any

from policyspec.reference.arc import ARC034CachePolicy


class Policy(ARC034CachePolicy[Any, Any]):
    def on_request_finished(
        self,
        key_groups: Sequence[Sequence[Any]],
        insertion_only_keys: Collection[Any],
        reused_keys: Collection[Any],
        req_context: Any,
    ) -> None:
        reused = set(reused_keys) | set(insertion_only_keys)  # the fault
        super().on_request_finished(key_groups, set(), reused, req_context)
