"""faulty: TOUCH-KEEPS-MEMBERSHIP profile=arc engine=fast capacity=8

Re-creates spec/bugs.md V3 (vLLM PR #34576), its other reading: ``touch`` takes
a T1 entry out of T1 and, finding its block not ready, forgets to put it
back, so a block being stored silently leaves the cache (the contract's
touch never changes membership, never drops a not-ready block). Core catches it
(spec/arc.md, "What core already catches"): TOUCH-KEEPS-MEMBERSHIP.
"""

from collections.abc import Iterable
from typing import Any

from policyspec.reference.arc import ARCCachePolicy


class Policy(ARCCachePolicy[Any, Any]):
    def touch(self, keys: Iterable[Any], req_context: Any) -> None:
        for key in reversed(list(keys)):
            if key in self.t1:
                block = self.t1.pop(key)
                if block.ref_cnt >= 0:
                    self.t2[key] = block
                # the fault: a block in flight is not put back into T1
            else:
                super().touch([key], req_context)
