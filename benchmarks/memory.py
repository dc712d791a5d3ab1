"""Peak memory (tracemalloc) of a short run and of a ten times longer one.

Two measurements: ``policyspec check --profile lru`` on the reference LRU
with every default engine (a budget of U work units, then 10 U), and the fast
engine alone (E examples, then 10 E: the same work per example, ten times
as much of it). A run that kept its history (traces, findings, caches that
grow) would need about ten times the memory; target: at most 1.2 times.
The first numbers are peaks of all memory Python had allocated during the
run, imports and earlier runs included; the second ones count only what
the run itself added. Each default engine is also measured alone (U / 2,
then 5 U work units), to show which one grows.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from policyspec.engines import ENGINES, EngineContext
from policyspec.engines.fast import run_fast
from policyspec.profiles import get_profile
from policyspec.reference import LRUCachePolicy
from policyspec.session import run_check
from policyspec.subject import subject_from_class

__all__ = ["MemoryUse", "measure_memory"]


@dataclass
class MemoryUse:
    what: str
    short: tuple[int, int]
    """(peak, peak above the memory held before the run), in bytes."""
    long: tuple[int, int]

    @property
    def ratio(self) -> float:
        return self.long[0] / self.short[0]


def _peak(work: Callable[[], object]) -> tuple[int, int]:
    gc.collect()
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    work()
    peak = tracemalloc.get_traced_memory()[1]
    return peak, peak - before


def measure_memory(units: float, examples: int) -> list[MemoryUse]:
    subject = subject_from_class(LRUCachePolicy)
    lru = get_profile("lru")
    tracemalloc.start()
    try:
        run_check(subject, lru, budget=min(units, 0.5))  # imports and first-use caches
        out = [
            MemoryUse(
                f"policyspec check --profile lru, budget {units:g} vs {10 * units:g} units",
                _peak(lambda: run_check(subject, lru, budget=units)),
                _peak(lambda: run_check(subject, lru, budget=10 * units)),
            ),
            MemoryUse(
                f"fast engine, {examples} vs {10 * examples} examples",
                _peak(lambda: run_fast(EngineContext(subject, lru, 0, 0, 64, count=examples))),
                _peak(lambda: run_fast(EngineContext(subject, lru, 0, 0, 64, count=10 * examples))),
            ),
        ]
        for engine in ENGINES.values():
            if engine.default and engine.applies(lru):
                run = engine.run
                out.append(MemoryUse(
                    f"{engine.name} engine alone, {units / 2:g} vs {5 * units:g} units",
                    _peak(partial(run, EngineContext(subject, lru, units / 2, 0, 64))),
                    _peak(partial(run, EngineContext(subject, lru, 5 * units, 0, 64))),
                ))
    finally:
        tracemalloc.stop()
    return out
