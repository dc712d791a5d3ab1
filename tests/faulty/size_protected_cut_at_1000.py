"""faulty: EVICT-UNPROTECTED

A protected set cut at a fixed length: the policy copies ``protected`` into
a side table sized for a typical store (``MAX_PROTECTED`` keys, a few
hundred chunks of a prompt with room to spare) and honours only what fits.
A long prompt offers thousands of keys at once, all of them protected; the
ones past the first 1,000 (in the set's iteration order) can be evicted to
make room for the very store that offered them, like spec/bugs.md V1.

Size: ``evict`` with more than 1,000 protected keys, one of the keys past
the cut idle and chosen before an unprotected one; 1,000 protected keys
are all honoured.

engine: size (the engine that draws sizes; the others stay at 64 blocks)
"""

from collections.abc import Collection
from itertools import islice
from typing import Any

from policyspec.reference.lru import LRUCachePolicy

MAX_PROTECTED = 1000


class Policy(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        honoured = set(islice(protected, MAX_PROTECTED))  # the fault: the rest is dropped
        return super().evict(n, honoured)
