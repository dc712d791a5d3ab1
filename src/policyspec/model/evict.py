"""What evict may return (spec/evict.md), as predicates over plain data.

Core leaves the choice of victims open: ``evict_violation`` judges any
outcome. The lru refinement fixes it: ``lru_victims`` is the seed LRU's choice,
and it satisfies ``evict_violation`` (checked by CrossHair, spec/lru.md).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from policyspec.model.state import IDLE, State

__all__ = [
    "commit_evict",
    "eligible",
    "evict_violation",
    "lru_victims",
]


def eligible(state: State, protected: Collection[int]) -> list[int]:
    """Keys evict may take: idle, ref_cnt 0, not protected; least recent first."""
    return [k for k in state.idle if k not in protected and state.refs.get(k) == IDLE]


def evict_violation(
    state: State, n: int, protected: Collection[int], victims: Sequence[int] | None
) -> str | None:
    """The first core requirement an outcome of ``evict(n, protected)`` breaks,
    or None when the outcome is allowed. ``victims`` are the returned keys in
    order (None for a None result).

    EVICT-LIVENESS is a SHOULD: a None while n keys are eligible is reported
    under it, and the caller decides whether that fails the run.
    """
    allowed = eligible(state, protected)
    if victims is None:
        if n == 0:
            return "EVICT-ZERO"
        return "EVICT-LIVENESS" if len(allowed) >= n else None
    if n == 0 and len(victims) != 0:
        return "EVICT-ZERO"
    if len(victims) != n or len(set(victims)) != len(victims):
        return "EVICT-EXACT-N"
    for key in victims:
        if key in protected:
            return "EVICT-UNPROTECTED"
        if state.refs.get(key) != IDLE or key not in state.idle:
            return "EVICT-IDLE-ONLY"
    return None


def lru_victims(state: State, n: int, protected: Collection[int]) -> list[int] | None:
    """The seed LRU's answer: the first n eligible keys from the least recent
    end, or None when fewer than n exist. ``n == 0`` gives []."""
    if n == 0:
        return []
    chosen: list[int] = []
    for key in state.idle:
        if key in protected:
            continue
        chosen.append(key)
        if len(chosen) == n:
            return chosen
    return None


def commit_evict(state: State, victims: Sequence[int]) -> State:
    """The state after ``victims`` have been evicted: they are absent, and
    nothing else changes (EVICT-REMOVES, LRU-ORDER-KEPT)."""
    gone = set(victims)
    return State(
        {k: r for k, r in state.refs.items() if k not in gone},
        [k for k in state.idle if k not in gone],
        state.capacity,
    )
