"""The evict-linear engine: one ``evict(n)`` call must cost O(size + n).

A profile that bounds the work of a batch eviction as a MUST (ARC-EVICT-LINEAR:
vLLM's ARC restarted its scan for every victim, bug V5 of spec/bugs.md)
gets this engine. Its victims are right, so only the work can show the
fault: the engine counts looks at blocks and keys (``engines.counting``)
at two sizes, never a clock, so the verdict is the same on any machine.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from time import monotonic
from typing import Any

from policyspec.engines.counting import Counter, counted
from policyspec.environment import active
from policyspec.model.state import IDLE, IN_FLIGHT
from policyspec.run.context import Engine, EngineContext
from policyspec.run.result import EngineRun, Finding
from policyspec.subject import Subject

__all__ = ["SHAPES", "STEEPER", "run_evict_linear"]

ENGINE = "evict-linear"
SIZE = 2_000
"""Blocks held at the large size."""
GROWTH = 16
"""The large size over the small one."""
STEEPER = 4.0
"""Most growth allowed of the looks per block held plus victim: a linear
evict stays near 1, a rescan per victim grows about like GROWTH."""


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


@dataclass(frozen=True)
class Looks:
    """One counted evict: the looks it made and the victims asked for."""

    looks: int
    n: int
    size: int
    answered: bool
    """Whether evict answered a list (a refusal measures nothing)."""

    @property
    def per_block(self) -> float:
        return self.looks / (self.size + self.n)


def _evict_once(subject: Subject, shape: Shape, size: int, block: Callable[[int, int], Any],
                key: Callable[[int], Hashable]) -> Looks:
    """Fill a fresh policy as ``shape`` says, then count one evict."""
    with active(subject.environment()):
        return _filled_evict(subject, shape, size, block, key)


def _filled_evict(subject: Subject, shape: Shape, size: int, block: Callable[[int, int], Any],
                  key: Callable[[int], Hashable]) -> Looks:
    policy = subject.build(size)
    has_mark = subject.has("mark")
    keys = [key(i) for i in range(size)]
    blocks = [block(IN_FLIGHT, i) for i in range(size)]
    for k, stored in zip(keys, blocks, strict=True):
        policy.insert(k, stored)
    for k, stored in zip(keys, blocks, strict=True):
        stored.ref_cnt = IDLE
        if has_mark:
            policy.mark_evictable(k)
    _access_again(subject, policy, [k for i, k in enumerate(keys) if shape.touched(i)])
    for i, k in enumerate(keys):
        if shape.pinned(i, size):
            if has_mark:
                policy.mark_non_evictable(k)
            blocks[i].ref_cnt = 1
    n = size // shape.share
    counter = Counter()
    victims = policy.evict(n, set())
    return Looks(counter.looks, n, size, isinstance(victims, list))


def _access_again(subject: Subject, policy: Any, keys: list[Hashable]) -> None:
    """A second access of ``keys`` (T1 -> T2): a touch, or where vLLM has
    none (R10) a request that reused them and finishes."""
    if subject.has("touch"):
        policy.touch(keys)
    elif subject.make_request is not None:
        policy.on_request_finished((tuple(keys),), set(), set(keys),
                                   subject.make_request("evict-linear"))


def run_evict_linear(ctx: EngineContext, *, requirement: str = "ARC-EVICT-LINEAR") -> EngineRun:
    """Check ``requirement`` on every shape. The budget, the seed and the
    capacity play no part: the sizes are what the verdict needs."""
    subject = ctx.subject
    run = EngineRun(engine=ENGINE)
    started = monotonic()
    factories = counted(subject)
    if isinstance(factories, str):
        run.notes.append(f"{requirement} not judged: {factories}; the engine counts an "
                         "evict's work and never times it")
        return run
    block, key = factories
    for shape in SHAPES:
        small = _evict_once(subject, shape, SIZE // GROWTH, block, key)
        large = _evict_once(subject, shape, SIZE, block, key)
        run.calls += 2
        if not (small.answered and large.answered):
            run.notes.append(f"evict returned no list ({shape.name}): nothing measured")
            continue
        run.checked[requirement] += 1
        growth = large.per_block / max(small.per_block, 1.0)
        if growth > STEEPER:
            run.add(Finding(requirement, (
                f"evict({large.n}) on {SIZE:,} blocks ({shape.name}) looked at its entries "
                f"{large.looks:,} times ({large.per_block:.1f} per block held plus victim), "
                f"evict({small.n}) on {small.size:,} blocks {small.looks:,} times "
                f"({small.per_block:.1f}): {growth:.1f} times more per block at {GROWTH} "
                f"times the size; the spec allows O(blocks + n), growth at most "
                f"{STEEPER:g} (looks: reads of ref_cnt, hashes and comparisons of keys)"),
                (), ENGINE, shrunk=True))
            break
    run.seconds = monotonic() - started
    return run


# The arc profile bounds the work of one batch eviction as a MUST (bug V5).
ENGINES = (Engine("evict-linear", run_evict_linear, 0.02, only_for="arc"),)
