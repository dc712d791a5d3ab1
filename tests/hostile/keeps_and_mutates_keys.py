"""hostile: API-ARGS-UNCHANGED. touch keeps the caller's list and clears it on the next evict."""

from policyspec.reference import LRUCachePolicy


class Policy(LRUCachePolicy):  # type: ignore[type-arg]
    def __init__(self, cache_capacity):  # type: ignore[no-untyped-def]
        super().__init__(cache_capacity)
        self.kept = None

    def touch(self, keys):  # type: ignore[no-untyped-def]
        self.kept = keys
        super().touch(keys)

    def evict(self, n, protected):  # type: ignore[no-untyped-def]
        if isinstance(self.kept, list | set):  # the shapes that have a clear
            self.kept.clear()
        return super().evict(n, protected)
