"""Checking engines. Each takes an ``EngineContext`` (the subject, the
profile, its share of the time budget, the seed, and the options of the
run) and returns an ``EngineRun`` in requirement ids. ``ENGINES`` is the
registry ``policyspec check`` plans its budget over."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hypothesis.database import ExampleDatabase

from policyspec.engines.result import EngineRun, Finding
from policyspec.profiles import Profile
from policyspec.subject import Subject

__all__ = ["ENGINES", "Engine", "EngineContext", "EngineRun", "Finding", "register_engine"]


@dataclass(frozen=True)
class EngineContext:
    """Everything one engine run needs, built once by ``session.run_check``."""

    subject: Subject
    profile: Profile
    seconds: float
    """This engine's share of the budget (engines bounded otherwise ignore it)."""
    seed: int
    """The seed of this run (for a shard: ``session.shard_seed``)."""
    capacity: int
    shard: tuple[int, int] = (1, 1)
    """The part of a sharded campaign (engines that are not ``shardable``
    see it only through ``seed``)."""
    database: ExampleDatabase | None = None
    """Hypothesis's example database (``check --hypothesis-db``), or None."""
    depth: int | None = None
    keys: int | None = None
    symmetry: bool = True
    """The exhaustive engine's bounds (``--depth``, ``--keys``,
    ``--no-symmetry``); None: its defaults."""
    capacity_fixed: bool = False
    """``--capacity`` was given: every policy is built with ``capacity``.
    Otherwise an engine that draws sizes (the size engine) chooses its own
    per example, and ``capacity`` is the default for the others."""
    trace: str | None = None
    """A serving trace for the trace engine to play (``--trace``); None:
    its bundled sample."""


@dataclass(frozen=True)
class Engine:
    """A checking engine and its share of a time budget."""

    name: str
    run: Callable[[EngineContext], EngineRun]
    share: float
    """Fraction of the budget it gets (shares are normalised)."""
    default: bool = True
    """Part of every ``policyspec check`` run unless engines are chosen."""
    only_for: str | None = None
    """Run only when the profile includes this registry profile (e.g. an
    engine for ``cost`` or ``seed-errors`` requirements); None: always."""

    needs: str | None = None
    """A capability the subject must have for the engine to drive it
    (``Subject.has``); on another subject it makes no call and says so in a
    note. None: any subject."""

    shardable: bool = False
    """It splits its own search space by ``EngineContext.shard`` (the
    others get a seed of their own per shard)."""

    def applies(self, profile: Profile) -> bool:
        return self.only_for is None or self.only_for in profile.includes


ENGINES: dict[str, Engine] = {}


def register_engine(engine: Engine) -> Engine:
    ENGINES[engine.name] = engine
    return engine


def _stateful(ctx: EngineContext) -> EngineRun:
    from policyspec.engines.stateful import run_stateful

    return run_stateful(ctx.subject, ctx.profile, ctx.seconds, ctx.seed, ctx.capacity,
                        database=ctx.database, fixed=ctx.capacity_fixed)


register_engine(Engine("stateful", _stateful, 0.5))


def _manager(ctx: EngineContext) -> EngineRun:
    from policyspec.engines.manager import run_manager

    return run_manager(ctx.subject, ctx.profile, ctx.seconds, ctx.seed, ctx.capacity,
                       database=ctx.database, fixed=ctx.capacity_fixed)


register_engine(Engine("manager", _manager, 0.25))


def _metamorphic(ctx: EngineContext) -> EngineRun:
    from policyspec.engines.metamorphic import run_metamorphic

    return run_metamorphic(ctx.subject, ctx.profile, ctx.seconds, ctx.seed, ctx.capacity)


register_engine(Engine("metamorphic", _metamorphic, 0.2))


def _exhaustive(ctx: EngineContext) -> EngineRun:
    from dataclasses import replace

    from policyspec.engines.exhaustive import DEFAULT_BOUNDS, run_exhaustive

    bounds = replace(
        DEFAULT_BOUNDS,
        depth=DEFAULT_BOUNDS.depth if ctx.depth is None else ctx.depth,
        keys=DEFAULT_BOUNDS.keys if ctx.keys is None else ctx.keys,
        symmetry=ctx.symmetry,
    )
    return run_exhaustive(ctx.subject, ctx.profile, ctx.capacity, bounds, ctx.shard)


# Not a default engine: it runs when chosen (--engine exhaustive), bounded by
# --depth/--keys rather than by the time budget.
register_engine(Engine("exhaustive", _exhaustive, 0.5, default=False, shardable=True))


def _seed_errors(ctx: EngineContext) -> EngineRun:
    from policyspec.engines.seed_errors import run_seed_errors

    return run_seed_errors(ctx.subject, ctx.profile, ctx.seconds, ctx.seed, ctx.capacity)


register_engine(Engine("seed-errors", _seed_errors, 0.01, only_for="seed-errors"))


def _fast(ctx: EngineContext) -> EngineRun:
    from policyspec.engines.fast import run_fast

    return run_fast(ctx.subject, ctx.profile, ctx.seconds, ctx.seed, ctx.capacity,
                    fixed=ctx.capacity_fixed)


register_engine(Engine("fast", _fast, 0.15))


def _size(ctx: EngineContext) -> EngineRun:
    from policyspec.engines.size import run_size

    return run_size(ctx.subject, ctx.profile, ctx.seconds, ctx.seed, ctx.capacity,
                    fixed=ctx.capacity_fixed)


register_engine(Engine("size", _size, 0.1))


def _cost(ctx: EngineContext) -> EngineRun:
    from policyspec.engines.cost import run_cost

    return run_cost(ctx.subject, ctx.profile, ctx.seconds, ctx.seed, ctx.capacity)


# Measures fixed sizes (a verdict needs the full separation), whatever its share.
register_engine(Engine("cost", _cost, 0.1, only_for="cost"))


def _evict_linear(requirement: str) -> Callable[[EngineContext], EngineRun]:
    def run(ctx: EngineContext) -> EngineRun:
        from policyspec.engines.evict_linear import run_evict_linear

        return run_evict_linear(ctx.subject, ctx.profile, ctx.seconds, ctx.seed, ctx.capacity,
                                requirement=requirement)

    return run


# The arc profile bounds the work of one batch eviction as a MUST (bug V5).
register_engine(Engine("evict-linear", _evict_linear("ARC-EVICT-LINEAR"), 0.02, only_for="arc"))


def _arc_memory(ctx: EngineContext) -> EngineRun:
    from policyspec.engines.arc_memory import run_arc_memory

    return run_arc_memory(ctx.subject, ctx.profile, ctx.seconds, ctx.seed, ctx.capacity,
                          fixed=ctx.capacity_fixed)


# ARC's ghosts and target on small caches over a large key pool (ARC-EVICT-GHOSTS,
# ARC-STORE-MISS-ADAPT, ARC-CLEAR-RESET): the other engines' pools hide them.
register_engine(Engine("arc-memory", _arc_memory, 0.3, only_for="arc"))


def _request_memory(ctx: EngineContext) -> EngineRun:
    from policyspec.engines.arc_memory import run_arc_memory

    return run_arc_memory(ctx.subject, ctx.profile, ctx.seconds, ctx.seed, ctx.capacity,
                          fixed=ctx.capacity_fixed, ranked=True, engine="request-memory")


# The same sessions for vLLM 0.33's request-ranked LRU, with placed keys, hits
# among misses and request ids reused after a clear (LRU033-CLEAR-RESET).
register_engine(Engine("request-memory", _request_memory, 0.3, only_for="lru-0.33"))


def _manager_033(ctx: EngineContext) -> EngineRun:
    from policyspec.engines.manager_033 import run_manager_033

    return run_manager_033(ctx.subject, ctx.profile, ctx.seconds, ctx.seed, ctx.capacity,
                           fixed=ctx.capacity_fixed)


# vLLM 0.33.0's manager (its emulation) under request traffic, for a policy
# with the request hooks; it makes no call, with a note, on other revisions.
register_engine(Engine("manager-0.33", _manager_033, 0.08, needs="hooks"))


def _trace(ctx: EngineContext) -> EngineRun:
    from policyspec.engines.trace import run_trace

    return run_trace(ctx.subject, ctx.profile, ctx.seconds, ctx.seed, ctx.capacity,
                     trace=ctx.trace, fixed=ctx.capacity_fixed)


# A serving trace (the bundled sample, or --trace FILE) through the emulated
# manager of the policy's revision; the sample's share buys a count of requests.
register_engine(Engine("trace", _trace, 0.08, needs="hooks"))
