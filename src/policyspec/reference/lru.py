"""The reference LRU: the seed LRU's exact observable behaviour, made fast.

Written from spec/lru.md, independent of ``policyspec.model`` (the model is
its oracle, so the two must not share code).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Iterable
from typing import Generic, Protocol, TypeVar

__all__ = ["BlockLike", "LRUCachePolicy"]


class BlockLike(Protocol):
    """Any block status object: vLLM's ctypes ``BlockStatus`` or a stand-in.
    The policy only reads ``ref_cnt`` (and never writes either field)."""

    @property
    def ref_cnt(self) -> int: ...

    @property
    def block_id(self) -> int: ...


K = TypeVar("K")
B = TypeVar("B", bound=BlockLike)


class LRUCachePolicy(Generic[K, B]):
    """Least-recently-used eviction over idle blocks.

    Two structures: ``blocks`` holds every present key; ``evictable_blocks``
    holds exactly the idle keys (ref_cnt 0), least recent first. Eviction
    walks only the idle keys, so blocks in flight or being read cost nothing.

    Costs: get, insert, remove, mark_* O(1); touch O(len(keys));
    evict O(n + protected idle keys skipped).
    """

    def __init__(self, cache_capacity: int) -> None:
        # The capacity is the manager's business (it never asks for more
        # blocks than it has); LRU keeps it only for introspection.
        self.cache_capacity = cache_capacity
        self.blocks: dict[K, B] = {}
        self.evictable_blocks: OrderedDict[K, None] = OrderedDict()

    def get(self, key: K) -> B | None:
        return self.blocks.get(key)

    def insert(self, key: K, block: B) -> None:
        self.blocks[key] = block
        if block.ref_cnt == 0:
            self.evictable_blocks[key] = None

    def remove(self, key: K) -> None:
        # Strict on the key (KeyError when absent, like the seed), tolerant
        # on the idle list: an in-flight key was never idle.
        del self.blocks[key]
        self.evictable_blocks.pop(key, None)

    def touch(self, keys: Iterable[K]) -> None:
        # Last key first, so the head of the prefix ends up most recent.
        # Keys that are not idle (absent, in flight, being read) are skipped:
        # they get their recency when they become idle.
        idle = self.evictable_blocks
        move = idle.move_to_end
        ordered = keys if isinstance(keys, list | tuple) else list(keys)
        for key in reversed(ordered):
            if key in idle:
                move(key)

    def evict(self, n: int, protected: Collection[K]) -> list[tuple[K, B]] | None:
        if n == 0:
            return []
        idle = self.evictable_blocks
        if n > len(idle):
            return None
        victims: list[K] = []
        if protected:
            for key in idle:
                if key not in protected:
                    victims.append(key)
                    if len(victims) == n:
                        break
            if len(victims) < n:
                return None
        else:
            for key in idle:
                victims.append(key)
                if len(victims) == n:
                    break
        blocks = self.blocks
        result = [(key, blocks.pop(key)) for key in victims]
        for key in victims:
            del idle[key]
        return result

    def clear(self) -> None:
        self.blocks.clear()
        self.evictable_blocks.clear()

    def mark_evictable(self, key: K) -> None:
        # Called on a 0-transition: the key becomes the most recent idle key.
        # An already idle key keeps its place (the seed's assignment does).
        self.evictable_blocks[key] = None

    def mark_non_evictable(self, key: K) -> None:
        # Strict like the seed: the key must be idle (KeyError otherwise).
        del self.evictable_blocks[key]
