"""The policy object a trace's manager holds, for a policy of any API
revision (spec/traffic.md, "From a trace to manager calls"): an R9 policy as
it is, an older one as vLLM 0.33.0 would run it had it been ported by
deriving from 0.33's ``CachePolicy``, so that every revision can be played
on the same traffic.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any

from policyspec.adapters.seed import unwrap
from policyspec.exits import UsageError
from policyspec.releases import RELEASES
from policyspec.subject import SeedPolicy, Subject
from policyspec.vllm.standins.policies import ChunkStatus

__all__ = ["NATIVE", "Chunk", "DefaultHooks", "driven_policy"]

NATIVE = frozenset(r.revision for r in RELEASES)
"""Revisions whose policies the emulated manager calls directly: those of
the release folders (policyspec.releases)."""


class Chunk(ChunkStatus):
    """vLLM 0.33's ``ChunkStatus``, also readable as a ``BlockStatus``."""

    @property
    def block_id(self) -> int:
        return int(self.chunk_id)


def _ignored(key: Any) -> None:
    return None


def _no_clear() -> None:
    raise UsageError("the policy has no clear(), which vLLM's manager calls to reset "
                     "the cache; define it to simulate a trace that resets")


class DefaultHooks:
    """A seed-API policy with vLLM 0.33's base-class hooks (spec/traffic.md)."""

    def __init__(self, policy: SeedPolicy) -> None:
        self.policy = policy
        self.get = policy.get
        self.remove = policy.remove
        self.evict = policy.evict
        # What an older revision lacks is what vLLM's base class gives it:
        # marks do nothing; a policy without clear cannot be reset.
        self.clear = getattr(policy, "clear", _no_clear)
        self.mark_evictable = getattr(policy, "mark_evictable", _ignored)
        self.mark_non_evictable = getattr(policy, "mark_non_evictable", _ignored)
        self._insert = policy.insert
        self._touch = policy.touch

    def insert(self, key: Any, chunk: Any, req_context: Any) -> None:
        self._insert(key, chunk)

    def touch(self, keys: Collection[Any], req_context: Any) -> None:
        self._touch(keys)

    def on_store_miss(self, keys: Collection[Any], req_context: Any) -> None:
        self._touch(keys)

    def on_request_access(self, keys: Iterable[Any], req_context: Any) -> None:
        return None

    def on_request_finished(
        self, key_groups: Sequence[Sequence[Any]], insertion_only_keys: Collection[Any],
        reused_keys: Collection[Any], req_context: Any,
    ) -> None:
        for group in key_groups:
            self._touch(group)


def driven_policy(subject: Subject, capacity: int) -> Any:
    """A fresh policy of ``subject``, ready for the emulated 0.33 manager
    (spec/traffic.md)."""
    built = subject.build(capacity)
    if subject.api in NATIVE:
        return unwrap(built)
    if subject.has("hooks"):
        return built
    return DefaultHooks(built)
