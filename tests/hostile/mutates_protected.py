"""hostile: API-ARGS-UNCHANGED. evict discards the victims from the caller's protected set."""

from policyspec.reference import LRUCachePolicy


class Policy(LRUCachePolicy):  # type: ignore[type-arg]
    def evict(self, n, protected):  # type: ignore[no-untyped-def]
        if isinstance(protected, set):  # a frozenset has no add
            protected.add(b"policy-was-here")
        return super().evict(n, protected)
