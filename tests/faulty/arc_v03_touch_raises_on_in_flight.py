"""faulty: TOUCH-TOTAL profile=arc engine=fast capacity=8

Re-creates spec/bugs.md V3 (vLLM PR #34576): ``touch`` took a T1 entry out of
T1 and then, finding its block not ready, tried to move the same key to the
end of T1, which raised KeyError. Here the key is popped and then moved
within T1 exactly so. Core catches it (spec/arc.md, "What core already
catches"): touch must accept a block in any state (TOUCH-TOTAL).
"""

from collections.abc import Iterable
from typing import Any

from policyspec.reference.arc import ARCCachePolicy


class Policy(ARCCachePolicy[Any, Any]):
    def touch(self, keys: Iterable[Any], req_context: Any) -> None:
        for key in reversed(list(keys)):
            if key in self.t1:
                block = self.t1.pop(key)
                if block.ref_cnt < 0:
                    self.t1.move_to_end(key)  # the fault: the key was just popped
                else:
                    self.t2[key] = block
            else:
                super().touch([key], req_context)
