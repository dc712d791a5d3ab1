"""The evict-linear engine: one ``evict(n)`` call must cost O(size + n).

A profile whose requirements bound the work of a batch eviction as a MUST
(ARC-EVICT-LINEAR: vLLM's ARC restarted its scan for every victim, bug V5)
gets this engine through its registration (``only_for``), with the id to
report. Its victims are the right ones, so only the work can show it: the
engine fills a fresh policy through the caller contract in four shapes
(all idle in one list; all touched again; touched and pinned blocks
interleaved; pinned blocks in front of the idle ones) and evicts a half or
a quarter of what it holds in one call. With plain
policyspec blocks it counts the reads of ``ref_cnt`` (exact: at most
``READS`` per block held plus victim); with other blocks it times the same
call at two sizes ``GROWTH`` times apart and bounds the growth of the time
per block held (CPU time, median of rounds).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from time import monotonic, process_time_ns
from typing import Any

from policyspec.environment import active
from policyspec.model.state import IDLE, IN_FLIGHT
from policyspec.run.context import Engine, EngineContext
from policyspec.run.result import EngineRun, Finding
from policyspec.subject import Block, Subject

__all__ = ["READS", "SHAPES", "run_evict_linear"]

ENGINE = "evict-linear"
SIZE = 2_000
"""Blocks held when reads are counted (and the large size when timed)."""
GROWTH = 16
"""The large size over the small one, when timed."""
READS = 4
"""ref_cnt reads allowed per block held plus victim, when counted."""
SLOWER = 4.0
"""Most growth allowed of the time per block held, when timed: a linear
evict stays near 1, a rescan per victim grows like GROWTH."""
ROUNDS = 3


_reads = [0]


class _CountingBlock(Block):
    """A plain block that counts reads of ``ref_cnt``."""

    __slots__ = ("_ref",)

    @property
    def ref_cnt(self) -> int:
        _reads[0] += 1
        return self._ref

    @ref_cnt.setter
    def ref_cnt(self, value: int) -> None:
        self._ref = value


@dataclass(frozen=True)
class Shape:
    """How the cache is filled before the measured ``evict``."""

    name: str
    touched: Callable[[int], bool]
    """Blocks touched again after their store (they leave T1 for T2)."""
    pinned: Callable[[int, int], bool]
    """Blocks a load is reading during the evict (not eligible), by index
    and size."""
    share: int
    """evict(size // share)."""


SHAPES = (
    Shape("all idle, stored once", lambda i: False, lambda i, size: False, 2),
    Shape("all idle, touched again", lambda i: True, lambda i, size: False, 2),
    Shape("every other block touched again, every third one being read",
          lambda i: i % 2 == 0, lambda i, size: i % 3 == 0, 4),
    # Pinned blocks in front, where a rescan per victim crosses all of them
    # every time (spec/cost.md: the shape that hid the rescan from the cost
    # profile's per-victim ratio; here the reads of the one call show it).
    Shape("the oldest third being read, in front of every idle block",
          lambda i: False, lambda i, size: i < size // 3, 4),
)


def _evict_once(subject: Subject, shape: Shape, size: int, block: Callable[[int, int], Any]
                ) -> tuple[int, int, bool]:
    """Fill a fresh policy as ``shape`` says, then time one evict:
    (CPU nanoseconds, victims asked for, whether it answered a list)."""
    with active(subject.environment()):
        return _filled_evict(subject, shape, size, block)


def _filled_evict(subject: Subject, shape: Shape, size: int, block: Callable[[int, int], Any]
                  ) -> tuple[int, int, bool]:
    policy = subject.build(size)
    has_mark = subject.has("mark")
    keys: list[Hashable] = [subject.make_key(i) for i in range(size)]
    blocks = [block(IN_FLIGHT, i) for i in range(size)]
    for key, stored in zip(keys, blocks, strict=True):
        policy.insert(key, stored)
    for key, stored in zip(keys, blocks, strict=True):
        stored.ref_cnt = IDLE
        if has_mark:
            policy.mark_evictable(key)
    _access_again(subject, policy, [k for i, k in enumerate(keys) if shape.touched(i)])
    for i, key in enumerate(keys):
        if shape.pinned(i, size):
            if has_mark:
                policy.mark_non_evictable(key)
            blocks[i].ref_cnt = 1
    n = size // shape.share
    start = process_time_ns()
    victims = policy.evict(n, set())
    spent = process_time_ns() - start
    return spent, n, isinstance(victims, list)


def _access_again(subject: Subject, policy: Any, keys: list[Hashable]) -> None:
    """A second access of ``keys`` (T1 -> T2): a touch, or where vLLM has
    none (R10) a request that reused them and finishes."""
    if subject.has("touch"):
        policy.touch(keys)
    elif subject.make_request is not None:
        policy.on_request_finished((tuple(keys),), set(), set(keys),
                                   subject.make_request("evict-linear"))


def run_evict_linear(
    subject: Subject, profile: object, units: float, seed: int, capacity: int, *,
    requirement: str,
) -> EngineRun:
    """Check ``requirement`` on every shape. The budget, ``seed`` and
    ``capacity`` play no part: the sizes are what the verdict needs."""
    run = EngineRun(engine=ENGINE)
    started = monotonic()
    counting = subject.make_block is Block
    for shape in SHAPES:
        if counting:
            before = _reads[0]
            _, n, answered = _evict_once(subject, shape, SIZE, _CountingBlock)
            reads = _reads[0] - before
            allowed = READS * (SIZE + n)
            failed = reads > allowed
            what = (f"evict({n}) on {SIZE} blocks ({shape.name}) read ref_cnt {reads} times; "
                    f"the spec allows O(blocks + n), here {allowed}")
        else:
            ratios = []
            for _ in range(ROUNDS):
                small, n_small, _ = _evict_once(subject, shape, SIZE // GROWTH, subject.make_block)
                large, n, answered = _evict_once(subject, shape, SIZE, subject.make_block)
                per_small = small / (SIZE // GROWTH + n_small)
                ratios.append(large / (SIZE + n) / max(per_small, 1.0))
            ratio = statistics.median(ratios)
            failed = ratio > SLOWER
            what = (f"evict({n}) on {SIZE} blocks ({shape.name}) took {ratio:.1f} times "
                    f"longer per block than on {SIZE // GROWTH} blocks; the spec allows "
                    f"O(blocks + n), growth at most {SLOWER:g}")
        run.calls += 1
        if not answered:
            run.notes.append(f"evict returned no list ({shape.name}): nothing measured")
            continue
        run.checked[requirement] += 1
        if failed:
            run.add(Finding(requirement, what, (), ENGINE, shrunk=True))
            break
    run.seconds = monotonic() - started
    return run


def run(ctx: EngineContext) -> EngineRun:
    return run_evict_linear(ctx.subject, ctx.profile, ctx.units, ctx.seed, ctx.capacity,
                            requirement="ARC-EVICT-LINEAR")


# The arc profile bounds the work of one batch eviction as a MUST (bug V5).
ENGINES = (Engine("evict-linear", run, 0.02, only_for="arc"),)
