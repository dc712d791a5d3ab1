"""faulty: ARC-TOUCH-NOT-READY profile=arc engine=fast capacity=8

Re-creates the behaviour spec/bugs.md V3 (vLLM PR #34576) was about
(ARC-TOUCH-NOT-READY):
a block the scheduler touches while its store is still in flight has been
prepared once, not used twice, and must stay in T1. This ARC promotes every
T1 key it is touched with to T2, ready or not, so blocks seen once fill T2
and later victims come from the wrong list.
"""

from collections.abc import Iterable
from typing import Any

from policyspec.reference.arc import ARCCachePolicy


class Policy(ARCCachePolicy[Any, Any]):
    def touch(self, keys: Iterable[Any], req_context: Any) -> None:
        for key in reversed(list(keys)):
            if key in self.t1:
                self.t2[key] = self.t1.pop(key)  # the fault: no readiness check
            else:
                super().touch([key], req_context)
