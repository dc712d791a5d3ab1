"""faulty: API-NO-RAISE engine=fast,stateful also=EVICT-IDLE-ONLY

Re-creates spec/bugs.md V14 (vllm PR #44533, the multimodal LRUCache): ``touch``
on a key the policy does not hold adds it to the order structure. The
orphan entry is never cleaned up: a later legal ``evict`` meets it and
fails (here KeyError: API-NO-RAISE; in vLLM's cache, ``popitem`` looped
forever, API-RETURNS), and a key touched before its store is already
"idle" when it is inserted in flight, so ``evict`` can return a block the
worker is still writing (EVICT-IDLE-ONLY, ``also=``). Both are what the
manager cannot survive; that the touch left a trace at all is only the
SHOULD TOUCH-ABSENT-NEUTRAL (since spec 1.1.0: correct designs learn from
misses), which tests/faulty/touch_absent_reorders.py shows alone.
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
