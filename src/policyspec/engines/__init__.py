"""The checking engines, one module each, and their registry.

Each engine module declares itself (``ENGINES``: ``run.context.Engine``,
what it needs of a policy, its share of a budget, how many parts its work
splits into) and runs from an ``EngineContext`` (``run_fast(ctx)``, ...);
this module only collects them. ``ENGINES`` is what ``policyspec check``
plans a budget over; ``register_engine`` adds one of one's own
(spec/extending.md).
"""

from __future__ import annotations

from policyspec.engines import (
    arc_memory,
    cost,
    evict_linear,
    exhaustive,
    fast,
    manager_machine,
    metamorphic,
    seed_errors,
    size,
    stateful,
    trace,
    vllm_manager,
)
from policyspec.run.context import Engine, EngineContext
from policyspec.run.result import EngineRun, Finding

__all__ = ["ENGINES", "Engine", "EngineContext", "EngineRun", "Finding", "register_engine"]

ENGINES: dict[str, Engine] = {}


def register_engine(engine: Engine) -> Engine:
    ENGINES[engine.name] = engine
    return engine


for _module in (stateful, manager_machine, metamorphic, exhaustive, seed_errors, fast, size, cost,
                evict_linear, arc_memory, vllm_manager, trace):
    for _engine in _module.ENGINES:
        register_engine(_engine)
