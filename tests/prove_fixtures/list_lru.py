"""A correct LRU over a plain dict and a plain list, with its abstraction
pair: the example of spec/prove.md, and the base of the faulty fixtures
that share its representation (each re-exports ``POLICYSPEC_ABSTRACTION``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from policyspec import State


class ListLRU:
    """``blocks``: every present key; ``order``: the idle keys, least
    recent first."""

    def __init__(self, cache_capacity: int) -> None:
        self.cache_capacity = cache_capacity
        self.blocks: dict[Any, Any] = {}
        self.order: list[Any] = []

    def get(self, key: Any) -> Any:
        return self.blocks.get(key)

    def insert(self, key: Any, block: Any) -> None:
        self.blocks[key] = block
        if block.ref_cnt == 0:
            self.order.append(key)

    def remove(self, key: Any) -> None:
        del self.blocks[key]
        if key in self.order:
            self.order.remove(key)

    def touch(self, keys: Iterable[Any]) -> None:
        for key in reversed(list(keys)):
            if key in self.order:
                self.order.remove(key)
                self.order.append(key)

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        chosen = [key for key in self.order if key not in protected][:n]
        if len(chosen) < n:
            return None
        for key in chosen:
            self.order.remove(key)
        return [(key, self.blocks.pop(key)) for key in chosen]

    def clear(self) -> None:
        self.blocks.clear()
        self.order.clear()

    def mark_evictable(self, key: Any) -> None:
        self.order.append(key)

    def mark_non_evictable(self, key: Any) -> None:
        self.order.remove(key)


def to_model(policy: ListLRU) -> State:
    """The model state a ListLRU holds."""
    return State({k: b.ref_cnt for k, b in policy.blocks.items()}, list(policy.order),
                 policy.cache_capacity)


def from_model(policy: ListLRU, state: State, blocks: Mapping[int, Any]) -> None:
    """Make a fresh ListLRU hold ``state``."""
    policy.blocks = {key: blocks[key] for key in state.refs}
    policy.order = list(state.idle)


POLICYSPEC_ABSTRACTION = (to_model, from_model)
