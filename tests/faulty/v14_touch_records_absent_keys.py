"""faulty: TOUCH-ABSENT-NEUTRAL engine=metamorphic also=API-NO-RAISE

Re-creates BUGS.md V14 (vllm PR #44533, the multimodal LRUCache): ``touch``
on a key the policy does not hold adds it to the order structure. The
orphan entry is never cleaned up; a later ``evict`` meets it and fails, and
a key touched before its store is already "idle" when it is inserted in
flight. A touch that names only keys never inserted must leave no trace
(spec/touch.md), which the metamorphic engine checks by comparing runs with
and without such touches. An orphan also makes a later legal ``evict`` raise
KeyError, which is API-NO-RAISE in its own right (``also=``).
"""

from collections.abc import Iterable
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def touch(self, keys: Iterable[Any]) -> None:
        for key in reversed(list(keys)):
            if key in self.evictable_blocks:
                self.evictable_blocks.move_to_end(key)
            elif key not in self.blocks:
                self.evictable_blocks[key] = None  # the fault: an orphan entry
