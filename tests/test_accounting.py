"""A PASS is an observation: a requirement counts as checked only when a
call exercised it and an outcome showed it. Runs that never make a kind of
call leave that call's requirements NOT TESTED, never PASS."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from policyspec.adapters import subject_for_class
from policyspec.engines import ENGINES, Engine, EngineContext, EngineRun, register_engine
from policyspec.harness import Lockstep
from policyspec.profiles import get_profile
from policyspec.reference import ARCCachePolicy
from policyspec.reports.report import NOT_TESTED, PASS
from policyspec.session import run_check
from policyspec.sources.action_source import KINDS, ActionSource

NEVER = ("remove", "touch", "clear")


def _no_touch_remove_clear(ctx: EngineContext) -> EngineRun:
    """Stores, completions, loads, gets and evictions only."""
    weights = [0 if kind in NEVER else w for kind, w in
               zip(KINDS, (200, 200, 15, 80, 90, 160, 100, 60, 1), strict=True)]
    run = EngineRun(engine="no-touch")
    for example in range(20):
        source = ActionSource(random.Random(example), pool=24, capacity=ctx.capacity,
                              weights=weights)
        harness = Lockstep(ctx.subject, ctx.profile, ctx.capacity)
        for _ in range(200):
            action = source.next(harness.state)
            assert action[0] not in NEVER
            harness.apply(action)
        run.checked.update(harness.checked)
        run.calls += harness.calls
        run.examples += 1
    return run


@pytest.fixture
def no_touch_engine() -> Iterator[str]:
    register_engine(Engine("no-touch", _no_touch_remove_clear, 1.0, default=False))
    yield "no-touch"
    del ENGINES["no-touch"]


def test_arc_ids_of_calls_never_made_are_not_tested(no_touch_engine: str) -> None:
    report = run_check(subject_for_class(ARCCachePolicy), get_profile("arc"), budget=1.0,
                       engines=[no_touch_engine], capacity=16)
    status = {r.id: r.status for r in report.requirements}
    for rid in ("ARC-TOUCH-ORDER", "ARC-TOUCH-NOT-READY", "ARC-GHOST-ADAPT",
                "ARC-REMOVE-NO-GHOST", "ARC-CLEAR-RESET", "TOUCH-TOTAL", "REMOVE-DROPS"):
        assert status[rid] == NOT_TESTED, rid
    for rid in ("ARC-INSERT-T1", "ARC-EVICT-ORDER", "ARC-EVICT-GHOSTS", "ARC-MARK-NO-EFFECT",
                "EVICT-IDLE-ONLY", "MARK-EVICTABLE-ELIGIBLE"):
        assert status[rid] == PASS, rid


def test_a_refinement_id_waits_for_a_compared_eviction() -> None:
    """A touch that moves keys exercises the order, but only an eviction
    shows it: until then it is pending, not checked."""
    model = get_profile("lru").model(8)
    for action in (("insert", 0, 0), ("insert", 1, 0), ("touch", (0,))):
        for call in model.calls(action):
            step = model.step(call)
            assert not step.exercised, call
            model = step.model
    assert "LRU-TOUCH-ORDER" in model.pending
    step = model.step(("evict", 1, frozenset()))
    assert "LRU-TOUCH-ORDER" in step.exercised and not step.model.pending
