"""The trace player (spec/traffic.md, "From a trace to manager calls"):
the calls vLLM's scheduler makes for each request, in order, at the trace's
times; requests that overlap; the slots; deferred lookups and refused
stores tried again; the same calls on every run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from policyspec.reference import LRU033CachePolicy
from policyspec.vllm.manager import OffloadingManagerEmulation
from policyspec.workload.player import Player, Timing, play
from policyspec.workload.ports import Chunk
from policyspec.workload.reader import BLOCK_TOKENS, TraceRequest, block_key, read_trace
from policyspec.workload.sample import sample_path


@dataclass
class Stored:
    keys_to_store: list[bytes]
    evicted_keys: list[bytes]


class FakeManager:
    """A manager that stores everything it is offered (unless told to
    refuse), logs every call with the player's time, and names keys by
    their block number."""

    def __init__(self, refuse: int = 0) -> None:
        self.player: Player | None = None
        self.log: list[tuple[Any, ...]] = []
        self.state: dict[bytes, str] = {}
        self.refuse = refuse

    def _note(self, *entry: Any) -> None:
        assert self.player is not None
        self.log.append((self.player.now_us, *entry))

    def on_new_request(self, ctx: Any) -> None:
        self._note("new", ctx.req_id)

    def lookup(self, key: bytes, ctx: Any) -> str:
        found = {"ready": "HIT", "writing": "HIT_PENDING"}.get(self.state.get(key, ""), "MISS")
        self._note("lookup", ctx.req_id, name(key), found)
        return found

    def prepare_load(self, keys: list[bytes], ctx: Any) -> None:
        self._note("load", ctx.req_id, names(keys))

    def complete_load(self, keys: list[bytes], ctx: Any) -> None:
        self._note("load done", ctx.req_id, names(keys))

    def prepare_store(self, keys: list[bytes], ctx: Any) -> Stored | None:
        self._note("store", ctx.req_id, names(keys))
        if self.refuse:
            self.refuse -= 1
            return None
        new = [k for k in keys if k not in self.state]
        self.state.update(dict.fromkeys(new, "writing"))
        return Stored(new, [])

    def complete_store(self, keys: list[bytes], ctx: Any, success: bool = True) -> None:
        self._note("store done", ctx.req_id, names(keys))
        self.state.update(dict.fromkeys(keys, "ready"))

    def on_request_finished(self, ctx: Any) -> None:
        self._note("finish", ctx.req_id)


def name(key: bytes) -> int:
    """The block number of a key (``block_key``'s first 8 bytes)."""
    return int.from_bytes(key[:8], "big")


def names(keys: list[bytes]) -> list[int]:
    return [name(k) for k in keys]


def request(at_ms: float, blocks: list[int], output: int = 10, line: int = 1) -> TraceRequest:
    return TraceRequest(line, at_ms, len(blocks) * BLOCK_TOKENS, output, tuple(blocks))


DEFAULT = Timing()


def run(requests: list[TraceRequest], timing: Timing = DEFAULT, refuse: int = 0
        ) -> tuple[FakeManager, Player]:
    manager = FakeManager(refuse)
    player = Player(manager, requests, timing=timing)
    manager.player = player
    player.run()
    return manager, player


def ops(manager: FakeManager, req: str | None = None) -> list[tuple[Any, ...]]:
    return [entry[1:] for entry in manager.log if req is None or entry[2] == req]


def test_one_request_looks_up_stores_in_prefill_steps_and_finishes() -> None:
    timing = Timing(prefill_tokens_per_ms=512.0, decode_ms_per_token=1.0,
                    transfer_ms_per_block=0.5, chunk_blocks=4)
    manager, player = run([request(0, [1, 2, 3, 4, 5, 6], output=10)], timing)
    r = "trace-1-line-1"
    assert ops(manager) == [
        ("new", r), ("lookup", r, 1, "MISS"),
        ("store", r, [1, 2, 3, 4]), ("store", r, [5, 6]), ("store done", r, [1, 2, 3, 4]),
        ("store done", r, [5, 6]), ("finish", r),
    ]
    times = [entry[0] for entry in manager.log]
    # 4 blocks prefilled by 4 ms and stored in 2 ms; 2 more by 6 ms, stored in 1 ms; 10
    # tokens decoded by 16 ms.
    assert times == [0, 0, 4000, 6000, 6000, 7000, 16000]
    assert player.counts.blocks == 6 and player.counts.hit_blocks == 0
    assert player.counts.blocks_stored == 6 and player.counts.finishes == 1


def test_positions_are_each_blocks_end_token() -> None:
    contexts: list[Any] = []

    class Keep(FakeManager):
        def on_new_request(self, ctx: Any) -> None:
            contexts.append(ctx)
            super().on_new_request(ctx)

    manager = Keep()
    player = Player(manager, [request(0, [4, 9, 2])])
    manager.player = player
    player.run()
    ctx = contexts[0]
    assert [ctx.get_offload_key_position(block_key(b)) for b in (4, 9, 2)] == [512, 1024, 1536]


def test_a_later_request_loads_its_cached_prefix_and_stores_the_rest() -> None:
    manager, player = run([request(0, [1, 2, 3], line=1), request(10_000, [1, 2, 3, 7], line=2)])
    r = "trace-2-line-2"
    assert ops(manager, r) == [
        ("new", r), ("lookup", r, 1, "HIT"), ("lookup", r, 2, "HIT"), ("lookup", r, 3, "HIT"),
        ("lookup", r, 7, "MISS"), ("load", r, [1, 2, 3]), ("load done", r, [1, 2, 3]),
        ("store", r, [7]), ("store done", r, [7]), ("finish", r),
    ]
    assert player.counts.hit_blocks == 3 and player.counts.blocks == 7
    assert player.counts.hit_rate == 3 / 7


def test_requests_overlap_as_their_times_do_and_wait_for_a_slot() -> None:
    trace = [request(0, [1, 2], output=100, line=1), request(1, [3, 4], output=100, line=2)]
    manager, player = run(trace)
    assert player.counts.most_running == 2 and player.counts.waited == 0
    second = [entry[1] for entry in manager.log].index("new", 1)
    assert manager.log[second][1:] == ("new", "trace-2-line-2")
    assert "finish" not in [entry[1] for entry in manager.log[:second]]

    manager, player = run(trace, Timing(max_running=1))
    assert player.counts.most_running == 1 and player.counts.waited == 1
    kinds = [entry[1] for entry in manager.log]
    assert kinds.index("finish") < kinds.index("new", 1)


def test_a_block_still_being_stored_defers_the_lookups() -> None:
    slow = Timing(transfer_ms_per_block=100.0, retry_ms=50.0)
    # The first request's two blocks are prefilled by 102.4 ms and written until 302.4 ms.
    trace = [request(0, [1, 2], output=0, line=1), request(150, [1, 2, 5], output=0, line=2)]
    manager, player = run(trace, slow)
    r = "trace-2-line-2"
    lookups = [e for e in ops(manager, r) if e[0] == "lookup"]
    assert lookups[0] == ("lookup", r, 1, "HIT_PENDING")
    assert player.counts.deferred >= 1
    assert lookups[-3:] == [("lookup", r, 1, "HIT"), ("lookup", r, 2, "HIT"),
                            ("lookup", r, 5, "MISS")]


def test_a_refused_store_is_offered_again_until_the_finish() -> None:
    timing = Timing(prefill_tokens_per_ms=512.0, decode_ms_per_token=10.0, retry_ms=20.0)
    manager, player = run([request(0, [1, 2], output=10)], timing, refuse=3)
    r = "trace-1-line-1"
    stores = [e for e in manager.log if e[1] == "store"]
    assert [e[3] for e in stores] == [[1, 2]] * 4
    assert [e[0] for e in stores] == [2000, 22000, 42000, 62000]
    assert ops(manager, r)[-3:] == [("store", r, [1, 2]), ("store done", r, [1, 2]),
                                    ("finish", r)]
    assert player.counts.stores_refused == 3

    manager, player = run([request(0, [1, 2], output=10)], timing, refuse=99)
    assert ops(manager, r)[-1] == ("finish", r)
    # offers at 2, 22, 42, 62, 82 ms, the last at the finish (102 ms)
    assert player.counts.stores == 6 and player.counts.blocks_stored == 0


def test_the_same_trace_gives_the_same_calls() -> None:
    trace = list(read_trace(sample_path()))[:120]
    first, _ = run(trace)
    second, _ = run(trace)
    assert first.log == second.log and len(first.log) > 1000


def test_the_emulated_manager_plays_the_sample_with_more_hits_in_a_larger_cache() -> None:
    trace = list(read_trace(sample_path()))[:200]
    rates = []
    for size in (64, 4096):
        manager = OffloadingManagerEmulation(LRU033CachePolicy(cache_capacity=size), size,
                                             chunk_type=Chunk)
        counts = play(manager, trace)
        assert counts.requests == counts.finishes == 200
        rates.append(counts.hit_rate)
        assert manager.num_write_pending_chunks == 0  # every store completed
    assert 0 < rates[0] < rates[1]
