"""hostile: API-NO-RAISE. get raises RuntimeError for keys it has never held."""

from policyspec.reference import LRUCachePolicy


class Policy(LRUCachePolicy):  # type: ignore[type-arg]
    def get(self, key):  # type: ignore[no-untyped-def]
        if key not in self.blocks:
            raise RuntimeError("unknown key")
        return self.blocks[key]
