"""faulty: ARC-STORE-MISS-ADAPT profile=arc-0.34 engine=arc-memory capacity=8

vLLM 0.34.0's ARC that learns only from B1 ghosts at a store miss, as if
ported from a version that adapted to B2 ghosts in ``touch``: with touch
gone, a key evicted from T2 and stored again never lowers the target, so
T1 keeps more room than vLLM's ARC gives it and evictions the target
decides differ. A B2 ghost needs a key reused by a request (T2), evicted,
and stored again, then an eviction the target decides: capacity 16 makes
that come up within seconds.
"""

from collections.abc import Iterable
from typing import Any

from policyspec.reference.arc import ARC034CachePolicy


class Policy(ARC034CachePolicy[Any, Any]):
    def on_store_miss(self, keys: Iterable[Any], req_context: Any) -> None:
        for key in reversed(list(keys)):
            if key in self.b1:  # the fault: a B2 ghost teaches nothing
                self._ghost_hit(key)
