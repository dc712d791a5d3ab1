"""Reference policies: fast, typed, and checked by the suite like any other."""

from policyspec.reference.arc import ARCCachePolicy
from policyspec.reference.lru import LRUCachePolicy

__all__ = ["ARCCachePolicy", "LRUCachePolicy"]
