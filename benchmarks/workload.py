"""A realistic workload, as vLLM's CPU-offload manager drives a policy.

Requests share prefixes (a few dozen system prompts and documents, the
popular ones much more often) and bring a suffix of their own. For each
request the manager touches all its keys, looks the prefix up with ``get``
until the first miss, starts loads of the hits (``mark_non_evictable`` on
idle blocks, ref_cnt + 1), and stores the rest: ``get`` of each offered
key, ``evict(n, protected=offered keys)`` when the free blocks do not
suffice (skipped when too few blocks are idle, as the manager's guard does),
then ``insert`` of fresh in-flight blocks. Up to ``concurrent`` requests
are in flight; the oldest then completes: its loads end (ref_cnt - 1,
``mark_evictable`` at 0) and its stores complete (ref_cnt 0,
``mark_evictable``) or, now and then, fail (``remove``). So many blocks are
being read at any time and evictions happen under pressure.

``make_log`` runs the manager against the reference LRU (its answers decide
what comes next) and logs every call and ref_cnt write; any exact seed LRU
receives the same calls, so the log replays on the seed-design baseline too.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from benchmarks.replay import BUILD, BlockRef, Log
from policyspec.reference import LRUCachePolicy
from policyspec.subject import Block, offload_key

__all__ = ["Workload", "make_log"]


@dataclass(frozen=True)
class Workload:
    capacity: int = 4096
    requests: int = 1200
    prefixes: int = 32
    prefix_blocks: tuple[int, int] = (32, 256)
    suffix_blocks: tuple[int, int] = (4, 64)
    concurrent: int = 24
    failure_rate: float = 0.02
    seed: int = 0


class _Manager:
    def __init__(self, capacity: int, log: Log) -> None:
        self.policy: LRUCachePolicy[Hashable, Block] = LRUCachePolicy(capacity)
        self.log = log
        log.append((BUILD, (capacity,)))
        self.blocks: dict[Hashable, Block] = {}
        self.index: dict[Hashable, int] = {}
        """key -> the insert index (in the log) of its current block."""
        self.inserted = 0
        self.free = capacity
        self.idle = 0

    def call(self, op: str, *args: Any) -> Any:
        self.log.append((op, args))
        return getattr(self.policy, op)(*args)

    def set_ref(self, key: Hashable, value: int) -> None:
        self.blocks[key].ref_cnt = value
        self.log.append(("set_ref", (self.index[key], value)))

    def lookup(self, keys: list[Hashable]) -> int:
        hits = 0
        for key in keys:
            block = self.call("get", key)
            if block is None or block.ref_cnt < 0:
                break
            hits += 1
        return hits

    def start_loads(self, keys: list[Hashable]) -> None:
        for key in keys:
            block = self.blocks[key]
            if block.ref_cnt == 0:
                self.call("mark_non_evictable", key)
                self.idle -= 1
            self.set_ref(key, block.ref_cnt + 1)

    def end_loads(self, keys: list[Hashable]) -> None:
        for key in keys:
            block = self.blocks[key]
            self.set_ref(key, block.ref_cnt - 1)
            if block.ref_cnt == 0:
                self.call("mark_evictable", key)
                self.idle += 1

    def store(self, offered: list[Hashable]) -> list[Hashable]:
        new = [key for key in offered if self.call("get", key) is None]
        need = len(new) - self.free
        if need > self.idle:
            return []  # the manager's guard: the store is refused without asking
        if need > 0:
            victims = self.call("evict", need, set(offered))
            if victims is None:
                return []
            for key, _ in victims:
                del self.blocks[key]
            self.free += need
            self.idle -= need
        for key in new:
            block = self.blocks[key] = Block(-1, self.inserted)
            self.index[key] = self.inserted
            self.inserted += 1
            self.log.append(("insert", (key, BlockRef(self.index[key], -1, block.block_id))))
            self.policy.insert(key, block)
        self.free -= len(new)
        return new

    def end_stores(self, keys: list[Hashable], failed: bool) -> None:
        for key in keys:
            block = self.blocks.get(key)
            if block is None or block.ref_cnt != -1:
                continue
            if failed:
                self.call("remove", key)
                del self.blocks[key]
                self.free += 1
            else:
                self.set_ref(key, 0)
                self.call("mark_evictable", key)
                self.idle += 1


def make_log(workload: Workload | None = None) -> Log:
    """The calls and ref_cnt writes of ``workload`` (see the module text)."""
    workload = workload or Workload()
    rng = random.Random(workload.seed)
    log: Log = []
    manager = _Manager(workload.capacity, log)
    prefixes = [
        [offload_key(1_000_000 * (p + 1) + j) for j in range(rng.randint(*workload.prefix_blocks))]
        for p in range(workload.prefixes)
    ]
    next_key = 0
    in_flight: deque[tuple[list[Hashable], list[Hashable]]] = deque()
    for _ in range(workload.requests):
        shared = prefixes[int(rng.paretovariate(1.2)) % workload.prefixes]
        length = rng.randint(1, len(shared))
        suffix = [offload_key(next_key + j) for j in range(rng.randint(*workload.suffix_blocks))]
        next_key += len(suffix)
        keys: list[Hashable] = [*shared[:length], *suffix]
        manager.call("touch", keys)
        hits = manager.lookup(keys)
        manager.start_loads(keys[:hits])
        stored = manager.store(keys[hits:])
        in_flight.append((keys[:hits], stored))
        if len(in_flight) > workload.concurrent:
            loads, stores = in_flight.popleft()
            manager.end_loads(loads)
            manager.end_stores(stores, rng.random() < workload.failure_rate)
    return log
