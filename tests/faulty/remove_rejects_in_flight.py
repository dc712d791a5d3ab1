"""faulty: API-NO-RAISE

Synthetic mutant: ``remove`` insists that the block is ready ("only a
complete block can be dropped"). The manager removes exactly the keys whose
store failed, which are in flight, so every failed store raises.
"""

from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def remove(self, key: Any) -> None:
        if self.blocks[key].ref_cnt < 0:
            raise ValueError(f"cannot remove {key!r}: block not ready")  # the fault
        super().remove(key)
