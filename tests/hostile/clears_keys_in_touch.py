"""hostile: API-ARGS-UNCHANGED. touch empties the caller's keys list while it runs."""

from policyspec.reference import LRUCachePolicy


class Policy(LRUCachePolicy):  # type: ignore[type-arg]
    def touch(self, keys):  # type: ignore[no-untyped-def]
        super().touch(keys)
        keys.clear()
