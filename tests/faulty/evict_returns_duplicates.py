"""faulty: EVICT-EXACT-N

Synthetic mutant from spec/bugs.md ("evict returns duplicates"),
the double free of SGLang's HiCache (S3) and LMCache's hot cache (L1): when
asked for more than one victim, the list repeats the first pair in place of
the last one, so the manager frees one slot twice and never frees the other.
"""

from collections.abc import Collection
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        victims = super().evict(n, protected)
        if victims and len(victims) > 1:
            victims[-1] = victims[0]  # the fault
        return victims
