"""faulty: CLEAR-EMPTIES

Re-creates spec/bugs.md V12 (vllm PR #41956, issue #57727: a reset that leaves
part of the cache serving blocks): ``clear`` drops the idle blocks but keeps
those in flight or being read, "because someone still uses them". The
manager has already put their slots back in its pool.
"""

from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def clear(self) -> None:
        for key in list(self.evictable_blocks):
            del self.blocks[key]  # the fault: busy blocks survive the reset
        self.evictable_blocks.clear()
