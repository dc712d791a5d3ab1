"""Reference policies: fast, typed, and checked by the suite like any other.

``LRUCachePolicy`` is the seed LRU (profile ``lru``); ``LRU033CachePolicy``
the request-ranked LRU of vLLM 0.33.0 (profile ``lru-0.33``);
``ARCCachePolicy`` vLLM's ARC at 0.33.0's API (profile ``arc``).
"""

from policyspec.reference.arc import ARCCachePolicy
from policyspec.reference.lru import LRUCachePolicy
from policyspec.reference.lru_033 import LRU033CachePolicy

__all__ = ["ARCCachePolicy", "LRU033CachePolicy", "LRUCachePolicy"]
