"""faulty: ARC-GHOST-ADAPT profile=arc engine=fast capacity=8

Re-creates spec/bugs.md G3 (openzfs/zfs issue #10548): the ghost hit was first
turned into a real hit (the key taken out of its ghost list) and the
adaptation ran afterwards, found no ghost and left the target alone, so the
ghost lists never moved it. Here ``touch`` takes a B1 or B2 key out of its
list, then asks which ghost list holds it.
"""

from collections.abc import Iterable
from typing import Any

from policyspec.reference.arc import ARCCachePolicy


class Policy(ARCCachePolicy[Any, Any]):
    def touch(self, keys: Iterable[Any], req_context: Any) -> None:
        for key in reversed(list(keys)):
            if key in self.b1 or key in self.b2:
                # the fault: revived first, so the adaptation below finds no ghost
                self.b1.pop(key, None)
                self.b2.pop(key, None)
                if key in self.b1:
                    self._grow_target()
                elif key in self.b2:
                    self._shrink_target()
            else:
                super().touch([key], req_context)
