"""How to run a check: ``CheckOptions``, what every front end (the CLI, the
pytest plugin, ``ConformanceSuite``, library use) maps its options onto,
and their defaults."""

from __future__ import annotations

from dataclasses import dataclass

from policyspec.engines import ENGINES
from policyspec.exits import UsageError
from policyspec.run.budget import BUDGETS

__all__ = ["DEFAULT_CALL_TIMEOUT", "DEFAULT_CAPACITY", "CheckOptions"]

DEFAULT_CAPACITY = 64
DEFAULT_CALL_TIMEOUT = 10.0
"""Seconds one policy call may take before it is reported (API-RETURNS)."""


@dataclass(frozen=True)
class CheckOptions:
    """How to run a check: what every front end maps its options onto."""

    budget: str | float = "standard"
    """A budget's name or its work units (``run.budget``): an amount of
    work, the same on any machine."""
    time_limit: float | None = None
    """Wall-time cap in seconds (``--time-limit``): a run it stops before
    its work is done ends ``incomplete``, never ``pass``. None: no cap."""
    seed: int = 0
    strict: bool = False
    engines: tuple[str, ...] | None = None
    """Engines to run by name; None: every default engine."""
    capacity: int = DEFAULT_CAPACITY
    capacity_fixed: bool = False
    """``capacity`` was chosen (``--capacity``): engines that draw sizes
    keep to it instead of drawing capacities of their own."""
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    shard: tuple[int, int] = (1, 1)
    hypothesis_db: str | None = None
    """A directory for Hypothesis's example database: failures found once
    are replayed first next time (cache it in CI). None: no database."""
    depth: int | None = None
    keys: int | None = None
    symmetry: bool = True
    """The exhaustive engine's bounds (None: its defaults)."""
    jobs: int | None = None
    """Worker processes (policyspec.workers); None: the cores this process
    may use; 1: every engine in turn in this process."""
    fail_fast: bool = False
    """The first MUST failure stops the other engines and workers."""
    isolate: bool = False
    memory_limit_mb: int = 4096
    api: str | None = None
    stand_in: bool = True
    placeholders: tuple[str, ...] = ()
    """Unmodelled vLLM names kept as inert placeholders (``--placeholder``)."""
    trace: str | None = None
    """A serving trace the trace engine plays instead of its sample (``--trace``)."""

    def validate(self) -> None:
        """UsageError, in one line, for options that cannot go together."""
        if isinstance(self.budget, str) and self.budget not in BUDGETS:
            raise UsageError(f"unknown budget {self.budget!r} (choose from: "
                             f"{', '.join(BUDGETS)}, or work units)")
        if not isinstance(self.budget, str) and self.budget <= 0:
            raise UsageError("--budget must be more than 0 work units")
        if self.time_limit is not None and self.time_limit <= 0:
            raise UsageError("--time-limit must be more than 0 seconds")
        if self.capacity < 1:
            raise UsageError("--capacity must be at least 1")
        unknown = [e for e in self.engines or () if e not in ENGINES]
        if unknown:
            raise UsageError(f"unknown engine {unknown[0]!r} (choose from: "
                             f"{', '.join(sorted(ENGINES))})")
        tuned = self.depth is not None or self.keys is not None or not self.symmetry
        if tuned and "exhaustive" not in (self.engines or ()):
            raise UsageError("--depth, --keys and --no-symmetry tune the exhaustive engine: "
                             "add --engine exhaustive")
        if self.depth == 0 or self.keys == 0:
            raise UsageError("--depth and --keys must be at least 1")
        if self.jobs is not None and self.jobs < 1:
            raise UsageError("--jobs must be at least 1")
        index, total = self.shard
        if not 1 <= index <= total:
            raise UsageError(f"--shard {index}/{total}: expected K/N with 1 <= K <= N")
        if self.trace is not None and self.engines and "trace" not in self.engines:
            raise UsageError("--trace FILE is played by the trace engine: add --engine trace")
