"""correct: a session-aware policy for R6 (PR #50422): the manager opens a
session around each store batch, every insert joins the open session, and
eviction empties the least recently touched session first.

Like the upstream draft, insert asserts that a session is open: it relies on
the manager's protocol (spec/contract.md, risk pattern 8). It is live: it
returns None only when fewer than n blocks are idle and unprotected.
"""

from collections.abc import Iterable

from vllm.v1.kv_offload.base import OffloadKey, ReqContext
from vllm.v1.kv_offload.cpu.policies.base import BlockStatus, CachePolicy


class SessionAwareCachePolicy(CachePolicy):
    def __init__(self, cache_capacity: int):
        super().__init__(cache_capacity)
        self.clear()

    def clear(self) -> None:
        self.blocks: dict[OffloadKey, BlockStatus] = {}
        self.idle: set[OffloadKey] = set()
        self.session_of: dict[OffloadKey, int] = {}
        self.members: dict[int, list[OffloadKey]] = {}
        self.last_touch: dict[int, int] = {}
        self.clock = 0
        self.next_session = 0
        self.open_id: int | None = None

    # -- session protocol -------------------------------------------------

    def open_session(self, req_context: ReqContext, num_blocks_in_cache: int) -> None:
        assert self.open_id is None, "session already open"
        self.open_id = self.next_session
        self.next_session += 1
        self.members[self.open_id] = []
        self.last_touch[self.open_id] = self.clock

    def close_session(self) -> None:
        if self.open_id is not None and not self.members[self.open_id]:
            del self.members[self.open_id]
            del self.last_touch[self.open_id]
        self.open_id = None

    def record_lookup(self, key: OffloadKey, req_context: ReqContext) -> None:
        return

    def on_request_finished(self, req_context: ReqContext) -> None:
        return

    # -- CachePolicy ------------------------------------------------------

    def get(self, key: OffloadKey) -> BlockStatus | None:
        return self.blocks.get(key)

    def insert(self, key: OffloadKey, block: BlockStatus) -> None:
        assert self.open_id is not None, "insert outside a session"
        self.blocks[key] = block
        self.session_of[key] = self.open_id
        self.members[self.open_id].append(key)
        if block.ref_cnt == 0:
            self.idle.add(key)

    def _forget(self, key: OffloadKey) -> None:
        del self.blocks[key]
        self.idle.discard(key)
        session = self.session_of.pop(key)
        keys = self.members[session]
        keys.remove(key)
        if not keys and session != self.open_id:
            del self.members[session]
            del self.last_touch[session]

    def remove(self, key: OffloadKey) -> None:
        self._forget(key)

    def touch(self, keys: Iterable[OffloadKey], req_context: ReqContext) -> None:
        self.clock += 1
        for key in keys:
            session = self.session_of.get(key)
            if session is not None:
                self.last_touch[session] = self.clock

    def evict(
        self,
        n: int,
        protected: set[OffloadKey],
        req_context: ReqContext,
        num_blocks_in_cache: int,
    ) -> list[tuple[OffloadKey, BlockStatus]] | None:
        if n == 0:
            return []
        order = sorted(self.members, key=lambda s: (self.last_touch[s], s))
        chosen: list[OffloadKey] = []
        for session in order:
            for key in reversed(self.members[session]):
                if key in self.idle and key not in protected:
                    chosen.append(key)
                    if len(chosen) == n:
                        break
            if len(chosen) == n:
                break
        if len(chosen) < n:
            return None
        result = [(key, self.blocks[key]) for key in chosen]
        for key in chosen:
            self._forget(key)
        return result

    def mark_evictable(self, key: OffloadKey) -> None:
        self.idle.add(key)

    def mark_non_evictable(self, key: OffloadKey) -> None:
        self.idle.discard(key)
