"""Stand-ins for vLLM's in-tree ``LRUCachePolicy`` and ``ARCCachePolicy`` at
their module paths, so that a policy deriving from one loads and is judged
without vLLM: the reference policies on the stand-in base, the 0.34.0
policy plus 0.33.0's ``touch``, driven as the profile's release. The LRU's
``on_store_miss`` is the base class's default of the release driven. Their
methods count as the policy's own; their module tells policyspec's own gaps
from the policy's (spec/check.md, "When policyspec, not the policy, is at
fault")."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from policyspec.reference.arc import ARCCachePolicy as _ReferenceARC
from policyspec.reference.lru034 import LRU034CachePolicy
from policyspec.reference.requests import RequestContextLike
from policyspec.releases import RELEASES
from policyspec.vllm.standins.policies import DEFAULT_MARK, CachePolicy

__all__ = ["ARCCachePolicy", "LRUCachePolicy", "drive_as"]

_REVISION = "_policyspec_revision"
_UNTOUCHED = frozenset(r.revision for r in RELEASES if not r.manager_touches)
"""The revisions whose base class's ``on_store_miss`` touches nothing."""


def drive_as(policy: object, revision: str) -> None:
    """Tell a policy built on the stand-in LRU which release's base-class
    defaults it runs under (R10 and every release without touch: 0.34.0's,
    else 0.33.0's), for the calls of
    a driver that does not supply them; other policies are left alone."""
    if isinstance(policy, LRUCachePolicy):
        setattr(policy, _REVISION, revision)


class LRUCachePolicy(LRU034CachePolicy[Any, Any], CachePolicy):  # type: ignore[misc]
    """vLLM's in-tree LRU (module doc): 0.34.0's with 0.33.0's ``touch``."""

    def __init__(self, cache_capacity: int) -> None:
        LRU034CachePolicy.__init__(self, cache_capacity)

    def touch(self, keys: Iterable[Any], req_context: RequestContextLike) -> None:
        # Tail first, so the head of the list ends most recent (as 0.33.0).
        self._refresh(reversed(list(keys)))

    def on_store_miss(self, keys: Iterable[Any], req_context: Any) -> None:
        # The base class's default, whichever release's it is (module doc);
        # marked so that the drivers and detection do not count it as the
        # policy's own and apply the default of the revision they drive. A
        # driver that calls it itself (the emulated manager) gets the default
        # of the revision the policy was built for (``drive_as``).
        if getattr(self, _REVISION, None) in _UNTOUCHED:
            return None
        CachePolicy.on_store_miss(self, keys, req_context)

    setattr(on_store_miss, DEFAULT_MARK, True)


class ARCCachePolicy(_ReferenceARC[Any, Any], CachePolicy):  # type: ignore[misc]
    """vLLM's in-tree ARC (module doc): 0.34.0's with 0.33.0's ``touch``."""

    def __init__(self, cache_capacity: int) -> None:
        _ReferenceARC.__init__(self, cache_capacity)

