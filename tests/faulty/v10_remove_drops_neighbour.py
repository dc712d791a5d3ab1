"""faulty: REMOVE-DROPS

Re-creates spec/bugs.md V10 (the failure cleanup of vLLM's old ARC manager,
which dropped a block that was already ready): ``remove`` clears the key
and then also pops the next key in insertion order, as an off-by-one in a
cleanup loop over a slice of keys would. A live neighbour disappears
without the manager knowing, leaking its slot and its data.
"""

from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def remove(self, key: Any) -> None:
        keys = list(self.blocks)
        index = keys.index(key)
        for gone in keys[index : index + 2]:  # the fault: one key too many
            del self.blocks[gone]
            self.evictable_blocks.pop(gone, None)
