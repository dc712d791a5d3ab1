"""faulty: EVICT-EXACT-N

A count compared with ``is``: the loop that collects victims stops when
``len(victims) is n``. CPython keeps one object for each int from -5 to
256, so for n up to 256 the identity test agrees with ``==``; from 257 on,
``len`` returns a new int object each time, the test never holds, and the
loop takes every eligible idle key: ``evict(n)`` returns more than n pairs,
and the manager frees block ids it never meant to give back.

Size: ``evict(n)`` with n of 257 or more while more than n idle keys are
outside ``protected``; n = 256 is correct.

engine: size (the engine that draws sizes; the others stay at 64 blocks)
"""

from collections.abc import Collection
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        idle = self.evictable_blocks
        if n > len(idle):
            return None
        victims: list[Any] = []
        for key in idle:
            if key not in protected:
                victims.append(key)
                if len(victims) is n:  # the fault: identity, not equality
                    break
        if len(victims) < n:
            return None
        result = [(key, self.blocks.pop(key)) for key in victims]
        for key in victims:
            del idle[key]
        return result
