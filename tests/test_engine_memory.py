"""The arc-memory and request-memory engines (engines/arc_memory.py): they
pass the references and catch the faults the benchmark's mutants showed the
other engines miss (benchmarks/results.txt, "Mutation")."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import pytest

from policyspec.adapters import subject_for_class
from policyspec.engines import ENGINES
from policyspec.engines.arc_memory import run_arc_memory
from policyspec.profiles import get_profile
from policyspec.reference import ARCCachePolicy, LRU033CachePolicy
from policyspec.reference.lru033 import RequestRank
from policyspec.run.context import EngineContext

EXAMPLES = 60


class UntrimmedARC(ARCCachePolicy[Any, Any]):
    """Never trims B1 and B2 to the capacity (bug V6's family)."""

    def _commit(self, picks: list[tuple[Any, Any, bool]]) -> list[tuple[Any, Any]]:
        for key, _, from_t1 in picks:
            if from_t1:
                del self.t1[key]
                self.b1[key] = None
            else:
                del self.t2[key]
                self.b2[key] = None
        return [(key, block) for key, block, _ in picks]


class NoStoreMissARC(ARCCachePolicy[Any, Any]):
    """Learns nothing from the ghosts a store misses (bug V7 under 0.33)."""

    def on_store_miss(self, keys: Any, req_context: Any) -> None:
        return None


class ClearKeepsTargetARC(ARCCachePolicy[Any, Any]):
    """clear() leaves the target at -1 instead of 0."""

    def clear(self) -> None:
        super().clear()
        self.target_t1_size = -1.0


class RefusesEverythingARC(ARCCachePolicy[Any, Any]):
    """Refuses an evict of every resident key although all are idle."""

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n and n == len(self.t1) + len(self.t2):
            return None
        return super().evict(n, protected)


class StaleRankLRU(LRU033CachePolicy[Any, Any]):
    """Reuses a request's rank from before a clear (the generation is ignored)."""

    def request_rank(self, req_context: Any) -> int:
        state = req_context.get_state(RequestRank)
        if isinstance(state, RequestRank) and state.owner is self:
            return state.rank
        return super().request_rank(req_context)


def _findings(cls: type, profile: str, engine: str) -> list[str]:
    ctx = EngineContext(subject_for_class(cls), get_profile(profile), 0.0, 0, 64, count=EXAMPLES)
    run = run_arc_memory(ctx, ranked=engine == "request-memory", engine=engine)
    assert run.error is None
    return [finding.requirement for finding in run.findings]


def test_the_engines_run_only_with_their_profiles() -> None:
    assert ENGINES["arc-memory"].applies(get_profile("arc"))
    assert not ENGINES["arc-memory"].applies(get_profile("lru"))
    assert ENGINES["request-memory"].applies(get_profile("lru-0.33"))
    assert not ENGINES["request-memory"].applies(get_profile("arc"))


@pytest.mark.parametrize(("cls", "profile", "engine"), [
    (ARCCachePolicy, "arc", "arc-memory"),
    (LRU033CachePolicy, "lru-0.33", "request-memory"),
])
def test_the_references_pass(cls: type, profile: str, engine: str) -> None:
    ctx = EngineContext(subject_for_class(cls), get_profile(profile), 0.0, 0, 64, count=EXAMPLES)
    run = run_arc_memory(ctx, ranked=engine == "request-memory", engine=engine)
    assert run.error is None and not run.findings
    assert run.examples == EXAMPLES and run.calls > 0
    exercised = {"arc": "ARC-EVICT-GHOSTS", "lru-0.33": "LRU033-CLEAR-RESET"}[profile]
    assert run.checked[exercised] > 0


@pytest.mark.parametrize(("cls", "profile", "engine", "ids"), [
    (UntrimmedARC, "arc", "arc-memory", {"ARC-EVICT-GHOSTS", "ARC-STORE-MISS-ADAPT"}),
    (NoStoreMissARC, "arc", "arc-memory", {"ARC-STORE-MISS-ADAPT"}),
    (ClearKeepsTargetARC, "arc", "arc-memory", {"ARC-CLEAR-RESET", "ARC-STORE-MISS-ADAPT"}),
    (RefusesEverythingARC, "arc", "arc-memory", {"ARC-LIVENESS"}),
    (StaleRankLRU, "lru-0.33", "request-memory",
     {"LRU033-CLEAR-RESET", "LRU033-FINISH-COMMIT", "LRU033-INSERT-RANK"}),
])
def test_a_memory_fault_is_caught(cls: type, profile: str, engine: str, ids: set[str]) -> None:
    """The engine's own id: the step that went wrong, or the profile's order
    id when only a later victim showed it (the report's attribution, which
    witness/explain.py does, names the operation)."""
    ids = ids | {"ARC-EVICT-ORDER" if profile == "arc" else "LRU033-EVICT-ORDER"}
    found = _findings(cls, profile, engine)
    assert found, f"{cls.__name__} passed {engine}"
    assert set(found) <= ids, found
