"""Checking engines. Each takes a subject, a profile, a time share and a
seed, and returns an ``EngineRun`` in requirement ids. ``ENGINES`` is the
registry ``policyspec check`` plans its budget over."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from policyspec.engines.result import EngineRun, Finding
from policyspec.profiles import Profile
from policyspec.subject import Subject

__all__ = ["ENGINES", "Engine", "EngineRun", "Finding", "register_engine"]


@dataclass(frozen=True)
class Engine:
    """A checking engine and its share of a time budget."""

    name: str
    run: Callable[[Subject, Profile, float, int, int], EngineRun]
    """(subject, profile, seconds, seed, capacity) -> EngineRun"""
    share: float
    """Fraction of the budget it gets (shares are normalised)."""
    default: bool = True
    """Part of every ``policyspec check`` run unless engines are chosen."""
    only_for: str | None = None
    """Run only when the profile includes this registry profile (e.g. an
    engine for ``cost`` or ``seed-errors`` requirements); None: always."""

    shardable: bool = False
    """``run`` also takes ``shard=(k, n)`` and checks only its k-th of n
    parts (``check --shard K/N``)."""

    def applies(self, profile: Profile) -> bool:
        return self.only_for is None or self.only_for in profile.includes


ENGINES: dict[str, Engine] = {}


def register_engine(engine: Engine) -> Engine:
    ENGINES[engine.name] = engine
    return engine


def _stateful(subject: Subject, profile: Profile, seconds: float, seed: int, capacity: int
              ) -> EngineRun:
    from policyspec.engines.stateful import policy_machine, run_machine

    machine = policy_machine(subject, profile, capacity=capacity)
    return run_machine(machine, engine="stateful", seed=seed, seconds=seconds)


register_engine(Engine("stateful", _stateful, 0.5))


def _manager(subject: Subject, profile: Profile, seconds: float, seed: int, capacity: int
             ) -> EngineRun:
    from policyspec.engines.manager import run_manager

    return run_manager(subject, profile, seconds, seed, capacity)


register_engine(Engine("manager", _manager, 0.25))


def _metamorphic(subject: Subject, profile: Profile, seconds: float, seed: int, capacity: int
                 ) -> EngineRun:
    from policyspec.engines.metamorphic import run_metamorphic

    return run_metamorphic(subject, profile, seconds, seed, capacity)


register_engine(Engine("metamorphic", _metamorphic, 0.2))


def _exhaustive(subject: Subject, profile: Profile, seconds: float, seed: int, capacity: int,
                shard: tuple[int, int] = (1, 1)) -> EngineRun:
    from policyspec.engines.exhaustive import run_exhaustive

    return run_exhaustive(subject, profile, capacity, shard=shard)


# Not a default engine: it runs when chosen (--engine exhaustive), bounded by
# --depth/--keys rather than by the time budget.
register_engine(Engine("exhaustive", _exhaustive, 0.5, default=False, shardable=True))


def _seed_errors(subject: Subject, profile: Profile, seconds: float, seed: int, capacity: int
                 ) -> EngineRun:
    from policyspec.engines.seed_errors import run_seed_errors

    return run_seed_errors(subject, profile, seconds, seed, capacity)


register_engine(Engine("seed-errors", _seed_errors, 0.01, only_for="seed-errors"))


def _fast(subject: Subject, profile: Profile, seconds: float, seed: int, capacity: int
          ) -> EngineRun:
    from policyspec.engines.fast import run_fast

    return run_fast(subject, profile, seconds, seed, capacity)


register_engine(Engine("fast", _fast, 0.15))


def _cost(subject: Subject, profile: Profile, seconds: float, seed: int, capacity: int
          ) -> EngineRun:
    from policyspec.engines.cost import run_cost

    return run_cost(subject, profile, seconds, seed, capacity)


# Measures fixed sizes (a verdict needs the full separation), whatever its share.
register_engine(Engine("cost", _cost, 0.1, only_for="cost"))


def _evict_linear(requirement: str) -> Callable[[Subject, Profile, float, int, int], EngineRun]:
    def run(subject: Subject, profile: Profile, seconds: float, seed: int, capacity: int
            ) -> EngineRun:
        from policyspec.engines.evict_linear import run_evict_linear

        return run_evict_linear(subject, profile, seconds, seed, capacity,
                                requirement=requirement)

    return run


# The arc profile bounds the work of one batch eviction as a MUST (bug V5).
register_engine(Engine("evict-linear", _evict_linear("ARC-EVICT-LINEAR"), 0.02, only_for="arc"))
