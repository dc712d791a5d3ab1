"""faulty: TOUCH-ABSENT-NEUTRAL engine=metamorphic

spec/bugs.md V14's structure (vllm PR #44533) made safe: ``touch`` records keys
it does not hold in its order structure, as the multimodal LRUCache did, but
``evict`` skips entries whose block is absent or not idle, so no orphan is
ever returned and nothing raises. What is left is a distorted order: a key
touched before it is stored enters with the place of the touch, older than
keys stored before it, and the orphans of keys never stored pile up. Nothing
the manager relies on breaks, so core reports it as the SHOULD it is
(spec/touch.md); the ``lru`` profile fails it as a wrong order.
"""

from collections.abc import Collection, Iterable
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def touch(self, keys: Iterable[Any]) -> None:
        for key in reversed(list(keys)):
            if key in self.evictable_blocks:
                self.evictable_blocks.move_to_end(key)
            elif key not in self.blocks:
                self.evictable_blocks[key] = None  # the fault: an orphan entry

    def insert(self, key: Any, block: Any) -> None:
        self.blocks[key] = block
        if block.ref_cnt == 0 and key not in self.evictable_blocks:
            self.evictable_blocks[key] = None

    def mark_evictable(self, key: Any) -> None:
        if key not in self.evictable_blocks:
            self.evictable_blocks[key] = None  # an orphan keeps its old place

    def mark_non_evictable(self, key: Any) -> None:
        self.evictable_blocks.pop(key, None)

    def remove(self, key: Any) -> None:
        del self.blocks[key]
        self.evictable_blocks.pop(key, None)

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        victims = [
            key for key in self.evictable_blocks
            if key in self.blocks and self.blocks[key].ref_cnt == 0 and key not in protected
        ][:n]
        if len(victims) < n:
            return None
        for key in victims:
            del self.evictable_blocks[key]
        return [(key, self.blocks.pop(key)) for key in victims]
