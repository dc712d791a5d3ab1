"""faulty: HOOK-TOTAL profile=arc engine=stateful

vLLM 0.33.0's ARC with an ``on_store_miss`` that walks its keys with
``reversed(keys)`` instead of ``reversed(list(keys))``: right for the list
the CPU manager passes, a TypeError for a generator or a set. The hook's
parameter is an ``Iterable``: any iterable must do.
"""

from collections.abc import Iterable
from typing import Any

from policyspec.reference.arc import ARCCachePolicy


class Policy(ARCCachePolicy[Any, Any]):
    def on_store_miss(self, keys: Iterable[Any], req_context: Any) -> None:
        for key in reversed(keys):  # type: ignore[call-overload]  # the fault
            self._ghost_hit(key)
