"""Reference policies: fast, typed, and checked by the suite like any other.

``LRUCachePolicy`` is the seed LRU (profile ``lru``); ``LRU033CachePolicy``
and ``LRU034CachePolicy`` the request-ranked LRU of vLLM 0.33.0 and 0.34.0
(profiles ``lru-0.33``, ``lru-0.34``); ``ARCCachePolicy`` and
``ARC034CachePolicy`` vLLM's ARC at 0.33.0's and 0.34.0's API (profiles
``arc``, ``arc-0.34``). Each 0.33 policy is its 0.34 one plus ``touch``.
"""

from policyspec.reference.arc import ARC034CachePolicy, ARCCachePolicy
from policyspec.reference.lru import LRUCachePolicy
from policyspec.reference.lru033 import LRU033CachePolicy
from policyspec.reference.lru034 import LRU034CachePolicy

__all__ = [
    "ARC034CachePolicy",
    "ARCCachePolicy",
    "LRU033CachePolicy",
    "LRU034CachePolicy",
    "LRUCachePolicy",
]
