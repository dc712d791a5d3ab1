"""Random caller-legal actions, drawn straight from the model state.

The engines that do not go through Hypothesis (fast random, metamorphic)
use this: it only proposes actions that ``is_legal`` accepts, with weights
that keep the cache busy (bursts of stores, reads in flight, evictions
under pressure) and reach large states.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from policyspec.model.actions import Action
from policyspec.model.state import IDLE, IN_FLIGHT, State

__all__ = ["ActionSource"]


class ActionSource:
    """Draws legal actions for a state. ``pool`` keys (0..pool-1) may be
    inserted; keys pool..pool+3 are never inserted (always absent)."""

    def __init__(
        self,
        rng: random.Random,
        *,
        pool: int,
        capacity: int,
        with_clear: bool = True,
        weights: Sequence[int] = (14, 10, 3, 8, 7, 10, 12, 3, 1),
    ) -> None:
        self.rng = rng
        self.pool = pool
        self.capacity = capacity
        self.with_clear = with_clear
        self.weights = list(weights)
        if not with_clear:
            self.weights[-1] = 0
        self._kinds = (
            "insert", "finish_store", "remove", "start_read", "end_read",
            "touch", "evict", "get", "clear",
        )

    def next(self, state: State) -> Action:
        """One legal action for ``state``."""
        rng = self.rng
        while True:
            kind = rng.choices(self._kinds, self.weights)[0]
            action = self._try(kind, state, rng)
            if action is not None:
                return action

    def _try(self, kind: str, state: State, rng: random.Random) -> Action | None:
        refs = state.refs
        if kind == "insert":
            if len(refs) >= min(self.pool, self.capacity):
                return None
            key = rng.randrange(self.pool)
            if key in refs:
                return None
            return ("insert", key, IDLE if rng.random() < 0.1 else IN_FLIGHT)
        if kind in ("finish_store", "remove", "start_read", "end_read"):
            if not refs:
                return None
            key = rng.choice(list(refs))
            ref = refs[key]
            if kind == "finish_store" and ref != IN_FLIGHT:
                return None
            if kind == "start_read" and ref < IDLE:
                return None
            if kind == "end_read" and ref <= IDLE:
                return None
            return (kind, key)
        if kind == "touch":
            size = rng.randrange(6)
            keys = tuple(self._any_key(state, rng) for _ in range(size))
            return ("touch", keys)
        if kind == "evict":
            idle = len(state.idle)
            n = rng.randrange(idle + 2)
            protected = frozenset(
                self._any_key(state, rng) for _ in range(rng.randrange(4))
            )
            return ("evict", n, protected)
        if kind == "get":
            return ("get", self._any_key(state, rng))
        if kind == "clear":
            return ("clear",) if self.with_clear and refs else None
        return None

    def _any_key(self, state: State, rng: random.Random) -> int:
        if state.idle and rng.random() < 0.5:
            return rng.choice(state.idle)
        return rng.randrange(self.pool + 4)
