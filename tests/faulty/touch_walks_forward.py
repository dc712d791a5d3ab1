"""faulty: LRU-TOUCH-ORDER profile=lru

Risk pattern 9 of spec/contract.md (touch order conventions) and the
prefix rule of vllm#39021 (spec/lru.md): ``touch`` walks the keys from first to last,
so the head of a request's prefix ends up least recent of the touched keys
and is evicted before its tail, which makes the rest of the prefix useless.
Under core any order is allowed, so this is an lru fault only.
"""

from collections.abc import Iterable
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def touch(self, keys: Iterable[Any]) -> None:
        for key in keys:  # the fault: forwards
            if key in self.evictable_blocks:
                self.evictable_blocks.move_to_end(key)
