"""The engine contract: what an engine declares (``Engine``) and what one
run of it gets (``EngineContext``). An engine is a module of
``policyspec.engines`` with one function of the context to an
``EngineRun`` (``run_fast(ctx)``, ...) and an ``Engine`` naming it;
``policyspec.engines`` registers them (spec/extending.md shows a new one).
Engines count their work and see the cap only through the context, so
that the budget's rule is written once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from time import monotonic

from hypothesis.database import ExampleDatabase

from policyspec.profiles import Profile
from policyspec.run.result import EngineRun
from policyspec.subject import Subject

__all__ = ["Engine", "EngineContext", "EngineOptions", "capped"]


def capped(cap: float | None) -> bool:
    """Whether the wall-time cap (a ``time.monotonic()`` instant) is past."""
    return cap is not None and monotonic() >= cap


@dataclass(frozen=True)
class EngineOptions:
    """What ``policyspec check``'s flags tell one engine and no other: the
    engines read them by name, so that a misspelt one is a type error, not
    an option silently ignored."""

    depth: int | None = None
    """The exhaustive engine's depth (``--depth``); None: its default."""
    keys: int | None = None
    """The exhaustive engine's keys (``--keys``); None: its default."""
    symmetry: bool = True
    """The exhaustive engine explores one sequence per renaming of keys
    (``--no-symmetry``: every one)."""
    trace: str | None = None
    """A serving trace the trace engine plays (``--trace``); None: its sample."""


@dataclass(frozen=True)
class EngineContext:
    """Everything one engine run needs, built by ``session.run_check``."""

    subject: Subject
    profile: Profile
    units: float
    """This run's share of the budget's work units (``run.budget``): the
    engine turns it into a count of examples (``examples``)."""
    seed: int
    """The seed of this run (a part's own, a shard's: ``session.shard_seed``)."""
    capacity: int
    shard: tuple[int, int] = (1, 1)
    """The part of a sharded campaign (engines that are not ``shardable``
    see it only through ``seed``)."""
    database: ExampleDatabase | None = None
    """Hypothesis's example database (``check --hypothesis-db``), or None."""
    capacity_fixed: bool = False
    """``--capacity`` was given: every policy is built with ``capacity``.
    Otherwise an engine that draws sizes chooses its own per example."""
    cap: float | None = None
    """The wall-time cap (``--time-limit``) as a ``time.monotonic()``
    instant: an engine that reaches it stops and says so
    (``EngineRun.planned``); None: no cap."""
    options: EngineOptions = field(default_factory=EngineOptions)
    """The options of one engine or another (``EngineOptions``)."""
    count: int | None = None
    """An exact count of the engine's examples (or requests, or scenarios)
    instead of the one ``units`` pays for: how a test or a tool drives one
    engine for a few examples through the same ``run`` as a check."""

    def examples(self, rate: float, least: int = 1) -> int:
        """This run's count of examples for an engine that does ``rate`` of
        them per work unit (at least ``least``), or ``count`` when given."""
        if self.count is not None:
            return self.count
        return max(least, self.work(rate))

    def work(self, rate: float) -> int:
        """This run's amount of work for an engine that measures it finer
        than in examples (the size engine: keys of scenario), ``rate`` per
        work unit, and may have none left for even one example."""
        return round(self.units * rate)

    def capped(self) -> bool:
        return capped(self.cap)


@dataclass(frozen=True)
class Engine:
    """A checking engine, as it declares itself."""

    name: str
    run: Callable[[EngineContext], EngineRun]
    share: float
    """Fraction of the budget's work it gets (shares are normalised)."""
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
    leads_for: str | None = None
    """A capability of the subject for which the engine's first part starts
    at once on a worker of its own with ``--jobs`` > 1, beside the quick
    finders (the stateful engine drives the request hooks best)."""
    parts: int = 1
    """Parts its work is split into, each with a seed of its own (random
    engines: 2): how ``--jobs`` runs one engine on several cores. The parts
    are the same whatever ``--jobs``, so the work is too."""

    def applies(self, profile: Profile) -> bool:
        return self.only_for is None or self.only_for in profile.includes
