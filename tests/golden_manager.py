"""Test-local stand-ins for the golden scenarios (spec/contract.md, vLLM's own tests).

``GoldenManager`` plays vLLM's seed-era CPU offloading manager as
spec/sources.md (C1-C12) describes it: block ids handed out fresh first, then reused from a LIFO
free list; an idle-block counter kept beside the policy; the fast-fail guard
that skips ``evict`` when the counter says it cannot succeed. It counts its
calls to ``policy.evict`` (the scenario's spy).

``ModelPolicy`` puts the seed API on the model's pure transitions so the same
scenarios run on the executable spec: each call first checks its
precondition predicate (raising ``CallerContractError`` if the manager broke
the contract), then replaces the state with the transition's result.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from policyspec.model import operations
from policyspec.model.preconditions import (
    can_evict,
    can_insert,
    can_mark_evictable,
    can_mark_non_evictable,
    can_remove,
)
from policyspec.model.state import State, well_formed
from policyspec.subject import Block

__all__ = [
    "HIT",
    "HIT_PENDING",
    "MISS",
    "CallerContractError",
    "GoldenManager",
    "ModelPolicy",
    "StoreOutput",
]

MISS = "MISS"
HIT_PENDING = "HIT_PENDING"
HIT = "HIT"


class CallerContractError(AssertionError):
    """The manager called the model outside its preconditions."""


class Policy(Protocol):
    def get(self, key: Any) -> Any: ...
    def insert(self, key: Any, block: Any) -> None: ...
    def remove(self, key: Any) -> None: ...
    def touch(self, keys: Any) -> None: ...
    def evict(self, n: int, protected: Any) -> Any: ...
    def clear(self) -> None: ...
    def mark_evictable(self, key: Any) -> None: ...
    def mark_non_evictable(self, key: Any) -> None: ...


class ModelPolicy:
    """The seed API over the model: keys are mapped to small ints, blocks
    are kept beside the state, and the block's ref_cnt as the manager last
    wrote it is copied into the state before every call."""

    def __init__(self, cache_capacity: int) -> None:
        self.cache_capacity = cache_capacity
        self.state = State(capacity=cache_capacity)
        self.blocks: dict[int, Block] = {}
        self._ids: dict[Hashable, int] = {}
        self._keys: dict[int, Hashable] = {}

    def _id(self, key: Hashable) -> int:
        if key not in self._ids:
            self._ids[key] = len(self._ids)
            self._keys[self._ids[key]] = key
        return self._ids[key]

    def _sync(self) -> None:
        # The manager writes ref_cnt through the block between calls; the
        # model's state only learns it here.
        self.state = State(
            {k: self.blocks[k].ref_cnt for k in self.state.refs},
            list(self.state.idle),
            self.state.capacity,
        )
        if not well_formed(self.state):
            raise CallerContractError(f"manager writes left an ill-formed state {self.state}")

    def _require(self, allowed: bool, call: str) -> None:
        if not allowed:
            raise CallerContractError(f"{call} breaks its precondition in {self.state}")

    def get(self, key: Hashable) -> Block | None:
        return self.blocks.get(self._id(key)) if operations.get(self.state, self._id(key)) else None

    def insert(self, key: Hashable, block: Block) -> None:
        self._sync()
        k = self._id(key)
        self._require(can_insert(self.state, k, block.ref_cnt), f"insert({key!r})")
        self.state = operations.insert(self.state, k, block.ref_cnt)
        self.blocks[k] = block

    def remove(self, key: Hashable) -> None:
        self._sync()
        k = self._id(key)
        if not can_remove(self.state, k):
            raise KeyError(key)  # the seed's strictness
        self.state = operations.remove(self.state, k)
        del self.blocks[k]

    def touch(self, keys: Iterable[Hashable]) -> None:
        self._sync()
        self.state = operations.touch(self.state, [self._id(key) for key in keys])

    def evict(self, n: int, protected: Collection[Hashable]) -> list[tuple[Hashable, Block]] | None:
        self._sync()
        ids = {self._id(key) for key in protected}
        self._require(can_evict(self.state, n, ids), f"evict({n})")
        self.state, victims = operations.evict(self.state, n, ids)
        if victims is None:
            return None
        return [(self._keys[k], self.blocks.pop(k)) for k in victims]

    def clear(self) -> None:
        self.state = operations.clear(self.state)
        self.blocks.clear()

    def mark_evictable(self, key: Hashable) -> None:
        self._sync()
        k = self._id(key)
        self._require(can_mark_evictable(self.state, k), f"mark_evictable({key!r})")
        self.state = operations.mark_evictable(self.state, k)

    def mark_non_evictable(self, key: Hashable) -> None:
        self._sync()
        k = self._id(key)
        if not can_mark_non_evictable(self.state, k):
            raise KeyError(key)  # the seed's strictness
        self.state = operations.mark_non_evictable(self.state, k)


@dataclass
class StoreOutput:
    keys_to_store: list[Hashable]
    block_ids: list[int]
    evicted_keys: list[Hashable]


@dataclass
class GoldenManager:
    """The seed-era manager's policy-facing behaviour (spec/sources.md, C1-C12)."""

    policy: Policy
    num_blocks: int
    allocated: int = 0
    free_list: list[int] = field(default_factory=list)
    num_evictable: int = 0
    evict_calls: int = 0
    events: list[tuple[str, list[Hashable]]] = field(default_factory=list)
    """("stored" | "evicted", keys) in emission order."""

    @classmethod
    def build(cls, policy_cls: Any, num_blocks: int) -> GoldenManager:
        return cls(policy=policy_cls(cache_capacity=num_blocks), num_blocks=num_blocks)

    def _free_count(self) -> int:
        return len(self.free_list) + self.num_blocks - self.allocated

    def _allocate(self, count: int) -> list[int]:
        fresh = min(count, self.num_blocks - self.allocated)
        ids = list(range(self.allocated, self.allocated + fresh))
        self.allocated += fresh
        ids += [self.free_list.pop() for _ in range(count - fresh)]
        return ids

    def lookup(self, key: Hashable) -> str:
        block = self.policy.get(key)
        if block is None:
            return MISS
        return HIT if block.ref_cnt >= 0 else HIT_PENDING

    def touch(self, keys: Sequence[Hashable]) -> None:
        self.policy.touch(list(keys))

    def prepare_store(self, keys: Sequence[Hashable]) -> StoreOutput | None:
        to_store = [key for key in keys if self.policy.get(key) is None]
        if not to_store:
            return StoreOutput([], [], [])
        evicted_keys: list[Hashable] = []
        need = len(to_store) - self._free_count()
        if need > 0:
            if need > self.num_evictable:
                return None  # the fast-fail guard: evict is not called
            self.evict_calls += 1
            evicted = self.policy.evict(need, set(keys))
            if evicted is None:
                return None
            self.num_evictable -= len(evicted)
            assert self.num_evictable >= 0, "the policy evicted a block that was not idle"
            for key, block in evicted:
                self.free_list.append(block.block_id)
                evicted_keys.append(key)
            self.events.append(("evicted", evicted_keys))
        ids = self._allocate(len(to_store))
        for key, block_id in zip(to_store, ids, strict=True):
            self.policy.insert(key, Block(ref_cnt=-1, block_id=block_id))
        return StoreOutput(to_store, ids, evicted_keys)

    def complete_store(self, keys: Sequence[Hashable], success: bool = True) -> None:
        stored: list[Hashable] = []
        for key in keys:
            block = self.policy.get(key)
            if block is None or block.ref_cnt >= 0:
                continue  # absent, or ready already (stored by someone else)
            if success:
                block.ref_cnt = 0
                self.num_evictable += 1
                self.policy.mark_evictable(key)
                stored.append(key)
            else:
                self.policy.remove(key)
                self.free_list.append(block.block_id)
        if stored:
            self.events.append(("stored", stored))

    def prepare_load(self, keys: Sequence[Hashable]) -> list[int]:
        ids: list[int] = []
        for key in keys:
            block = self.policy.get(key)
            assert block is not None and block.ref_cnt >= 0, f"{key!r} is not ready"
            if block.ref_cnt == 0:
                self.policy.mark_non_evictable(key)
                self.num_evictable -= 1
                assert self.num_evictable >= 0
            block.ref_cnt += 1
            ids.append(block.block_id)
        return ids

    def complete_load(self, keys: Sequence[Hashable]) -> None:
        for key in keys:
            block = self.policy.get(key)
            assert block is not None and block.ref_cnt > 0, f"{key!r} is not being read"
            block.ref_cnt -= 1
            if block.ref_cnt == 0:
                self.num_evictable += 1
                self.policy.mark_evictable(key)

    def reset_cache(self) -> None:
        self.policy.clear()
        self.num_evictable = 0
        self.free_list.clear()
        self.allocated = 0

    def take_events(self) -> list[tuple[str, list[Hashable]]]:
        events, self.events = self.events, []
        return events
