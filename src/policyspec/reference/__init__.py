"""Reference policies: fast, typed, and checked by the suite like any other."""

from policyspec.reference.lru import LRUCachePolicy

__all__ = ["LRUCachePolicy"]
