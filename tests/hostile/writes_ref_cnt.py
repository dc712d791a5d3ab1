"""hostile: BLOCK-NO-WRITE. mark_non_evictable raises ref_cnt itself."""

from policyspec.reference import LRUCachePolicy


class Policy(LRUCachePolicy):  # type: ignore[type-arg]
    def mark_non_evictable(self, key):  # type: ignore[no-untyped-def]
        super().mark_non_evictable(key)
        self.blocks[key].ref_cnt += 1
