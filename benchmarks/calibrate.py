"""The engines' rates (``RATE`` in each engine module): CPU seconds one of
their examples takes on the reference policies, and the rate that makes a
work unit (``policyspec.run.budget``) about UNIT_CPU CPU seconds of each
engine. ``quick`` (15 units) is then about 30 CPU seconds, 16 s of wall on
an idle 2-core machine with ``--jobs 2``.

CPU time (``time.process_time``) rather than wall time, so that a busy
machine measures the same; one process, one part of each engine.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from policyspec.engines import ENGINES
from policyspec.profiles import get_profile
from policyspec.reference import ARCCachePolicy, LRU034CachePolicy, LRUCachePolicy
from policyspec.run.context import EngineContext
from policyspec.subject import Subject, subject_from_class

__all__ = ["UNIT_CPU", "Rate", "measure_rates"]

UNIT_CPU = 2.0
"""CPU seconds of engine work per work unit (two cores for a second)."""

SUBJECTS = {
    # engine -> (subject, profile): the main job's reference LRU, and for
    # the engines that drive what it lacks, the reference ARC and the
    # reference request-ranked LRU (vLLM 0.34, R10).
    "stateful": ("lru", "lru"),
    "manager": ("lru", "lru"),
    "metamorphic": ("lru", "lru"),
    "fast": ("lru", "lru"),
    "size": ("lru", "lru"),
    "arc-memory": ("arc", "arc"),
    "request-memory": ("lru-0.34", "lru-0.34"),
    "vllm-manager": ("lru-0.34", "lru-0.34"),
}


def _subject(name: str) -> Subject:
    from policyspec.adapters import subject_for_class

    if name == "lru":
        return subject_from_class(LRUCachePolicy)
    if name == "arc":
        return subject_for_class(ARCCachePolicy, api="R9")
    return subject_for_class(LRU034CachePolicy)


@dataclass(frozen=True)
class Rate:
    engine: str
    subject: str
    examples: int
    cpu: float

    @property
    def per_example(self) -> float:
        return self.cpu / max(1, self.examples)

    @property
    def rate(self) -> float:
        """The RATE that makes one work unit UNIT_CPU CPU seconds."""
        return UNIT_CPU / self.per_example


def measure_rates(units: float = 5.0) -> list[Rate]:
    """Each engine of SUBJECTS run for ``units`` work units at its current
    RATE, timed in CPU seconds."""
    out = []
    for engine, (subject_name, profile_name) in SUBJECTS.items():
        ctx = EngineContext(_subject(subject_name), get_profile(profile_name), units, 0, 64)
        before = time.process_time()
        run = ENGINES[engine].run(ctx)
        cpu = time.process_time() - before
        out.append(Rate(engine, subject_name, run.examples, cpu))
    return out


if __name__ == "__main__":
    for found in measure_rates():
        print(f"{found.engine:<15}{found.subject:<10}{found.examples:>7} examples "
              f"{found.cpu:7.2f} CPU s  {found.per_example * 1000:9.2f} ms each  "
              f"RATE {found.rate:10.2f}")
