"""A CLOCK (second chance) CachePolicy for vLLM 0.34 (API revision R10),
written the way a newcomer to vLLM's offloading code would, to measure how
many of the faults nobody in policyspec planted the check finds (see
benchmarks/mutation.py). It is mutated, never imported by policyspec.

Chunks sit on a ring swept by a hand. A chunk a request read (a lookup
hit, or a reuse reported when the request finishes) gets its reference bit
set; the sweep clears a set bit and passes the chunk by once, and evicts
the first idle, unprotected chunk whose bit is clear. A new chunk goes in
just behind the hand, so it is the last one the sweep reaches. An eviction
that cannot find enough chunks changes nothing, not even the bits.
"""

from collections.abc import Iterable, Sequence

from vllm.v1.kv_offload.base import OffloadKey, ReqContext
from vllm.v1.kv_offload.cpu.policies.base import CachePolicy, ChunkStatus


class ClockCachePolicy(CachePolicy):
    def __init__(self, cache_capacity: int):
        super().__init__(cache_capacity)
        self.ring: list[OffloadKey] = []
        self.chunks: dict[OffloadKey, ChunkStatus] = {}
        self.referenced: set[OffloadKey] = set()
        self.hand = 0  # index in ring of the next chunk the sweep looks at

    def get(self, key: OffloadKey) -> ChunkStatus | None:
        return self.chunks.get(key)

    def insert(self, key: OffloadKey, chunk: ChunkStatus, req_context: ReqContext) -> None:
        self.chunks[key] = chunk
        self.ring.insert(self.hand, key)
        self.hand = (self.hand + 1) % len(self.ring)

    def remove(self, key: OffloadKey) -> None:
        del self.chunks[key]
        self.referenced.discard(key)
        index = self.ring.index(key)
        del self.ring[index]
        if index < self.hand:
            self.hand -= 1
        if self.hand >= len(self.ring):
            self.hand = 0

    def on_request_access(self, keys: Iterable[OffloadKey], req_context: ReqContext) -> None:
        for key in keys:
            if key in self.chunks:
                self.referenced.add(key)

    def on_request_finished(
        self,
        key_groups: Sequence[Sequence[OffloadKey]],
        insertion_only_keys: set[OffloadKey],
        reused_keys: set[OffloadKey],
        req_context: ReqContext,
    ) -> None:
        for key in reused_keys:
            if key in self.chunks:
                self.referenced.add(key)

    def evict(
        self, n: int, protected: set[OffloadKey]
    ) -> list[tuple[OffloadKey, ChunkStatus]] | None:
        if n == 0:
            return []
        size = len(self.ring)
        victims: list[int] = []  # ring indices, in the order the sweep took them
        taken: set[OffloadKey] = set()
        cleared: set[OffloadKey] = set()
        position = self.hand
        # two turns of the hand: the second sees the bits the first cleared
        for _ in range(2 * size):
            if len(victims) == n:
                break
            key = self.ring[position]
            position = (position + 1) % size
            if key in taken or key in protected or self.chunks[key].ref_cnt != 0:
                continue
            if key in self.referenced and key not in cleared:
                cleared.add(key)
                continue
            victims.append((position - 1) % size)
            taken.add(key)
        if len(victims) < n:
            return None  # the sweep was only a trial: nothing changed

        self.referenced -= cleared
        result = [(self.ring[i], self.chunks.pop(self.ring[i])) for i in victims]
        gone = set(victims)
        # the hand stays where the sweep stopped, counted on the shorter ring
        self.hand = sum(1 for i in range(position) if i not in gone)
        self.ring = [key for i, key in enumerate(self.ring) if i not in gone]
        if self.hand >= len(self.ring):
            self.hand = 0
        return result

    def clear(self) -> None:
        self.ring.clear()
        self.chunks.clear()
        self.referenced.clear()
        self.hand = 0
