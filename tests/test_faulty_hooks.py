"""The hook and request-state faults of tests/faulty/hooks/, each driven by
hand through the emulated vLLM manager of its release (0.33.0, or 0.34.0
for the R10 files) beside the reference it was made from: the same calls
give a different victim, a refused store, a missing chunk or a raise, so
every fault is real.

tests/test_corpus.py runs the same files through ``policyspec check``
under the ids their headers name.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from policyspec.reference import ARCCachePolicy, LRU033CachePolicy
from policyspec.reference.arc import ARC034CachePolicy
from policyspec.reference.lru034 import LRU034CachePolicy
from policyspec.vllm.manager import Lookup, OffloadingManagerEmulation
from policyspec.vllm.standins.keys import ReqContext
from policyspec.vllm.traffic import BLOCK_TOKENS, request_key

HOOKS = Path(__file__).parent / "faulty" / "hooks"
T = TypeVar("T")


def faulty(stem: str) -> type:
    spec = importlib.util.spec_from_file_location(f"hooks_{stem}", HOOKS / f"{stem}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    policy: type = module.Policy
    return policy


def block_of(key: bytes) -> int:
    return int.from_bytes(key[:-4], "big")


class Scene:
    """A manager around one policy, with requests by name whose blocks sit
    at positions 16, 32, ... in the order they were named."""

    def __init__(self, policy: type, chunks: int, release: str = "0.33") -> None:
        self.policy = policy(cache_capacity=chunks)
        self.manager = OffloadingManagerEmulation(self.policy, chunks, release=release)
        self.contexts: dict[str, ReqContext] = {}

    def ctx(self, name: str, *blocks: int) -> ReqContext:
        context = self.contexts.get(name)
        if context is None:
            context = self.contexts[name] = ReqContext(name)
            self.manager.on_new_request(context)
        for block in blocks:
            if context.get_offload_key_position(request_key(block, 0)) is None:
                done = len(context._offload_key_positions)
                context.set_offload_key_position(request_key(block, 0), BLOCK_TOKENS * (done + 1))
        return context

    def store(self, name: str, *blocks: int) -> list[int] | None:
        """prepare_store; the evicted blocks, or None when refused."""
        out = self.manager.prepare_store([request_key(b, 0) for b in blocks],
                                         self.ctx(name, *blocks))
        return None if out is None else [block_of(k) for k in out.evicted_keys]

    def done(self, name: str, *blocks: int) -> None:
        self.manager.complete_store([request_key(b, 0) for b in blocks], self.ctx(name))

    def store_in_groups(self, name: str, block: int, *groups: int) -> list[tuple[int, int]] | None:
        """prepare_store of one block in several KV-cache groups, at the
        position its block number gives; the evicted (block, group) pairs."""
        keys = [request_key(block, group) for group in groups]
        context = self.ctx(name)
        for key in keys:
            context.set_offload_key_position(key, BLOCK_TOKENS * block)
        out = self.manager.prepare_store(keys, context)
        if out is None:
            return None
        return [(block_of(k), int.from_bytes(k[-4:], "big")) for k in out.evicted_keys]

    def stored(self, name: str, *blocks: int) -> list[int] | None:
        evicted = self.store(name, *blocks)
        self.done(name, *blocks)
        return evicted

    def pin(self, name: str, *blocks: int) -> None:
        """prepare_load: the blocks are being read until complete_load."""
        self.manager.prepare_load([request_key(b, 0) for b in blocks], self.ctx(name, *blocks))

    def read(self, name: str, *blocks: int) -> None:
        self.pin(name, *blocks)
        self.manager.complete_load([request_key(b, 0) for b in blocks], self.ctx(name))

    def finish(self, name: str) -> None:
        self.manager.on_request_finished(self.ctx(name))

    def lookup(self, block: int) -> Lookup:
        return self.manager.lookup(request_key(block, 0), ReqContext("lookup"))


def on_other_thread(fn: Callable[[], T]) -> T:
    out: list[T] = []
    thread = threading.Thread(target=lambda: out.append(fn()))
    thread.start()
    thread.join()
    return out[0]


def both(reference: type, stem: str, chunks: int, script: Callable[[Scene], T],
         release: str = "0.33") -> tuple[T, T]:
    """The script's outcome on the reference and on the faulty file, each
    under the manager of ``release``."""
    return (script(Scene(reference, chunks, release)),
            script(Scene(faulty(stem), chunks, release)))


# -- lru-0.33 order faults ---------------------------------------------------------


def test_committing_head_first_evicts_the_head() -> None:
    def script(s: Scene) -> list[int] | None:
        s.stored("a", 1, 2)
        s.finish("a")
        return s.store("b", 3)

    assert both(LRU033CachePolicy, "lru033_commits_head_first", 2, script) == ([2], [1])


def test_a_rank_that_survives_clear_ranks_an_old_request_with_the_new_ones() -> None:
    def script(s: Scene) -> list[int] | None:
        s.stored("a", 1)  # request a starts before the reset and keeps running
        s.manager.reset_cache()
        s.stored("b", 3)
        s.stored("c", 4)
        s.stored("a", 2)
        return s.store("d", 5)

    assert both(LRU033CachePolicy, "lru033_rank_survives_clear", 3, script) == ([3], [2])


def test_an_access_that_lowers_a_rank_makes_a_newer_chunk_older() -> None:
    def script(s: Scene) -> list[int] | None:
        s.stored("r", 1)  # request r: block 1 at 16, block 2 at 32
        s.ctx("r", 2)
        s.stored("w", 2)  # a later request stores block 2
        s.stored("x", 3)
        s.read("r", 2)  # r reads it: its rank is older than w's
        return s.store("y", 4)

    assert both(LRU033CachePolicy, "lru033_access_lowers_rank", 3, script) == ([1], [2])


def test_a_finish_applied_again_makes_an_old_request_the_most_recent() -> None:
    def script(s: Scene) -> list[int] | None:
        s.stored("a", 1)
        s.finish("a")
        s.stored("b", 2)
        s.finish("b")
        return s.store("c", 3)

    assert both(LRU033CachePolicy, "lru033_refinishes_earlier_requests", 2, script) == (
        [1], [2]
    )


# -- threads --------------------------------------------------------------------------


def test_request_state_kept_per_thread_splits_a_requests_rank() -> None:
    def script(s: Scene) -> list[int] | None:
        s.stored("a", 1)
        s.stored("b", 3)
        on_other_thread(lambda: s.stored("a", 2))  # a's next batch, from the poll thread
        return s.store("d", 4)

    assert both(LRU033CachePolicy, "hook_state_per_thread", 3, script) == ([2], [1])


def test_chunks_kept_per_thread_are_absent_to_the_other_thread() -> None:
    def script(s: Scene) -> tuple[Lookup, Lookup]:
        s.stored("a", 1)
        return s.lookup(1), on_other_thread(lambda: s.lookup(1))

    assert both(LRU033CachePolicy, "hook_chunks_per_thread", 2, script) == (
        (Lookup.HIT, Lookup.HIT), (Lookup.HIT, Lookup.MISS)
    )


# -- hooks that change membership or eligibility -----------------------------------------


def test_a_store_miss_that_makes_room_drops_a_chunk_the_manager_still_counts() -> None:
    def script(s: Scene) -> tuple[list[int] | None, list[Lookup], int]:
        s.stored("a", 1, 2)
        evicted = s.store("b", 3)
        return evicted, [s.lookup(1), s.lookup(2)], s.manager.num_evictable_chunks

    reference, fault = both(LRU033CachePolicy, "hook_store_miss_makes_room", 2, script)
    assert reference == ([2], [Lookup.HIT, Lookup.MISS], 1)
    # one eviction reported, both chunks gone, the manager still counts one idle
    assert fault == ([1], [Lookup.MISS, Lookup.MISS], 1)


def test_an_access_that_holds_chunks_out_of_eviction_refuses_a_store() -> None:
    def script(s: Scene) -> list[int] | None:
        s.stored("a", 1, 2)
        s.store("r", 1, 2)  # request r meets both ready chunks (a request-level offer)
        return s.store("c", 3, 4)

    assert both(LRU033CachePolicy, "hook_access_pins_keys", 3, script) == ([2], None)


# -- hooks that raise or reject an iterable ---------------------------------------------


def test_an_access_hook_that_reads_absent_keys_raises_on_the_first_store() -> None:
    Scene(LRU033CachePolicy, 2).store("a", 1)
    with pytest.raises(KeyError):
        Scene(faulty("hook_access_raises_on_absent"), 2).store("a", 1)


def test_a_finish_hook_that_needs_idle_keys_raises_while_a_store_is_in_flight() -> None:
    for policy in (LRU033CachePolicy, faulty("hook_finish_raises_on_in_flight")):
        scene = Scene(policy, 2)
        scene.store("a", 1)
        if policy is LRU033CachePolicy:
            scene.finish("a")
            scene.done("a", 1)  # the completion arrives after the finish
            assert scene.lookup(1) is Lookup.HIT
        else:
            with pytest.raises(KeyError):
                scene.finish("a")


def test_a_store_miss_hook_that_needs_a_list_rejects_a_generator_and_a_set() -> None:
    fault = Scene(faulty("hook_store_miss_needs_a_list"), 2)
    assert fault.stored("a", 1) == []  # the manager passes a list: no sign of the fault
    keys = [request_key(2, 0), request_key(3, 0)]
    ctx = ReqContext("b")
    ARCCachePolicy(cache_capacity=2).on_store_miss((k for k in keys), ctx)
    ARCCachePolicy(cache_capacity=2).on_store_miss(set(keys), ctx)
    with pytest.raises(TypeError):
        fault.policy.on_store_miss((k for k in keys), ctx)
    with pytest.raises(TypeError):
        fault.policy.on_store_miss(set(keys), ctx)


# -- ARC at 0.33 ----------------------------------------------------------------------


def test_an_arc_that_adapts_in_insert_evicts_with_the_old_target() -> None:
    def script(s: Scene) -> list[int] | None:
        s.stored("a", 1, 2, 3)
        s.read("r", 3)
        s.finish("r")  # 3 reused: T2
        s.stored("b", 4)  # evicts 1 (ghost in B1)
        s.stored("c", 5)  # evicts 2 (ghost in B1)
        s.stored("d", 1)  # a ghost hit: target 1
        s.read("q", 5)
        s.finish("q")  # 5 reused: T1 = [1], T2 = [3, 5]
        return s.store("e", 2)  # a second ghost hit: target 2, before the eviction

    assert both(ARCCachePolicy, "arc033_adapts_in_insert", 3, script) == ([3], [1])


@pytest.mark.parametrize(("reference", "stem", "release"), [
    (ARCCachePolicy, "arc033_promotes_insertion_only", "0.33"),
    (ARC034CachePolicy, "arc034_promotes_insertion_only", "0.34"),
], ids=["0.33", "0.34"])
def test_an_arc_that_promotes_insertion_only_keys_evicts_from_t2(
        reference: type, stem: str, release: str) -> None:
    def script(s: Scene) -> list[int] | None:
        s.stored("p", 1)
        s.read("q", 1)
        s.finish("q")  # 1 reused: T2
        s.stored("a", 2)
        s.finish("a")  # 2 only inserted: stays in T1
        return s.store("c", 3)

    assert both(reference, stem, 2, script, release=release) == ([2], [1])


# -- vLLM 0.34 (R10): recency and frequency from the hooks only ---------------------


def test_an_lru_that_finishes_group_by_group_evicts_a_head_before_a_tail() -> None:
    def script(s: Scene) -> list[tuple[int, int]] | None:
        for block in (1, 2):  # blocks 1 (head) and 2 (tail) in groups 0 and 1
            s.store_in_groups("a", block, 0, 1)
        s.manager.complete_store([request_key(b, g) for b in (1, 2) for g in (0, 1)], s.ctx("a"))
        s.finish("a")
        return s.store_in_groups("b", 3, 0, 1)  # two chunks of room: the two tails

    reference, fault = both(LRU034CachePolicy, "lru034_finishes_group_by_group", 4, script,
                            release="0.34")
    assert reference is not None and sorted(reference) == [(2, 0), (2, 1)]
    assert fault is not None and sorted(fault) == [(1, 0), (2, 0)]  # group 0's head


def test_an_arc_that_ignores_t2_ghosts_evicts_from_t2_with_the_old_target() -> None:
    def script(s: Scene) -> list[int] | None:
        # 1 reused (T2); 4, then 2, evicted from T1 and stored again: two B1
        # ghost hits raise the target to 2, the second evicting 1 from T2 (a
        # B2 ghost); 4 reused: T1 = [2], T2 = [4], target 2.
        for name, block in zip("abcdefg", (1, 1, 4, 2, 4, 2, 4), strict=True):
            s.stored(name, block)
            s.finish(name)
        # 1 stored again: vLLM's ARC lowers the target and evicts from T1
        return s.store("h", 1)

    assert both(ARC034CachePolicy, "arc034_ignores_t2_ghosts", 2, script,
                release="0.34") == ([2], [4])


def test_an_access_hook_that_frees_a_pinned_key_lets_a_store_evict_it() -> None:
    def script(s: Scene) -> list[int] | None:
        s.stored("a", 1)
        s.finish("a")
        s.stored("x", 3)
        s.finish("x")
        s.pin("b", 1)  # 1 is being read: its access must not free it
        return s.store("c", 3, 2)  # 3 is offered, so protected: no idle key left

    assert both(LRU034CachePolicy, "hook034_access_frees_in_flight", 2, script,
                release="0.34") == (None, [1])


def test_every_file_has_a_direct_test_and_a_corpus_header() -> None:
    source = Path(__file__).read_text(encoding="utf-8")
    for path in sorted(HOOKS.glob("*.py")):
        assert f'"{path.stem}"' in source, f"{path.name} has no direct test"
        first = path.read_text(encoding="utf-8").split("\n", 1)[0]
        drivers = ("engine=stateful", "engine=request-memory", "engine=arc-memory")
        assert first.startswith('"""faulty: ') and any(d in first for d in drivers), (
            f"{path.name}: the request level is driven by the stateful engine or a memory "
            "engine (engines/arc_memory.py)")
