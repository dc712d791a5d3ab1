"""Request traffic for the fast engine: the calls of vLLM 0.33's manager.

A policy with the request hooks is called by requests (spec/request.md),
so ``RequestSource`` draws that traffic as ``ActionSource`` draws the seed
era's; every action it draws is legal by ``model.actions.is_legal``. It is
the only caller of its requests, so what it records of them is exact. A
later release's observation hooks (``hooks``) are called by its requests
too, so that the engines judge a hook no model rule names.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from itertools import filterfalse

from policyspec.model.actions import Action
from policyspec.model.state import IDLE, IN_FLIGHT
from policyspec.sources.action_source import (
    DEFAULT_WEIGHTS,
    RUN,
    SHORTEST,
    ActionSource,
    Run,
    StateView,
)

__all__ = ["HOOK_SHARE", "OPEN_REQUESTS", "REQUEST_WEIGHTS", "RequestSource", "position_of"]

REQUEST_WEIGHTS = (*DEFAULT_WEIGHTS[:5], 20, *DEFAULT_WEIGHTS[6:], 25)
"""``DEFAULT_WEIGHTS`` with touch rarer (0.33's scheduler no longer calls
it; the API still allows it) and one more kind: a request finishes."""

OPEN_REQUESTS = 4
"""Requests running at a time; one that finishes gives way to a new id."""

HOOK_SHARE = 0.25
"""Chance that a request's report also calls one of the observation hooks
(``RequestSource.hooks``), with the keys the request named."""


def position_of(key: int) -> int | None:
    """The end-token position the scheduler places for ``key`` in every
    request, or None: one key in five has none (a request whose keys do
    not all have one finishes with its keys in the order it saw them)."""
    return 16 * (key + 1) if key % 5 else None


class RequestSource(ActionSource):
    """``ActionSource`` with request traffic (spec/request.md): stores are a
    request's, loads report to their request, and requests finish.
    ``hooks``: observation hooks (``protocols.observation_hooks``) a
    request's report calls now and then (``HOOK_SHARE``)."""

    def __init__(
        self,
        rng: random.Random,
        *,
        pool: int,
        capacity: int,
        with_clear: bool = True,
        with_touch: bool = True,
        weights: Sequence[int] = REQUEST_WEIGHTS,
        long: bool = False,
        hooks: Sequence[str] = (),
    ) -> None:
        super().__init__(rng, pool=pool, capacity=capacity, with_clear=with_clear,
                         with_touch=with_touch, weights=weights[:-1], long=long)
        self.hooks = tuple(hooks)
        weights = [*self.weights, weights[-1]]
        self._run_tables(
            (self._request_store, self._finish_run, self._remove_run, self._request_read,
             self._end_run, self._touch_run, self._evict, self._get_run, self._clear,
             self._request_finish),
            weights,
        )
        self.begin()

    def begin(self) -> None:
        """A fresh policy: no request opened yet (request ids restart at 0)."""
        self._open = list(range(OPEN_REQUESTS))
        self._next_request = OPEN_REQUESTS
        self._placed: dict[int, set[int]] = {}
        """Keys each request placed a position for (kept across clears, as
        the positions are in the request's context)."""
        self._new_generation()
        self._store: tuple[int, list[int], int, frozenset[int]] | None = None
        """A store under way until its inserts: the request, the keys it
        stores, their ref_cnt, and every key it offered (protected)."""
        self._evicted = False
        """Whether the store under way has had its eviction."""
        self._after: Run | None = None
        """What comes right after the last run (a load's report)."""

    def _new_generation(self) -> None:
        """The cache generation starts again: no request has seen, missed,
        inserted, reused or finished anything in it."""
        self._seen: dict[int, dict[int, None]] = {}
        self._missed: dict[int, set[int]] = {}
        self._inserted: dict[int, set[int]] = {}
        self._reused: dict[int, set[int]] = {}

    def draw(self, state: StateView) -> Run:
        """``ActionSource.draw``, with a store under way or a load's report
        first."""
        after = self._after
        if after is not None:
            self._after = None
            return after
        if self._store is not None:
            run = self._store_step(state)
            if run is not None:
                return run
        return super().draw(state)

    # -- requests ---------------------------------------------------------------

    def _request(self) -> int:
        return self._open[int(self.rng.random() * OPEN_REQUESTS)]

    def _report(self, r: int, keys: list[int], absent: list[int]) -> list[Action]:
        """The request's positions for ``keys`` it has not placed, its new
        misses among the ``absent`` ones and its first-seen keys, as
        actions, and recorded as done; now and then an observation hook of
        all of ``keys`` after them (``HOOK_SHARE``)."""
        actions: list[Action] = []
        placed = self._placed.setdefault(r, set())
        new = [(k, p) for k in keys if k not in placed and (p := position_of(k)) is not None]
        if new:
            placed.update(k for k, _ in new)
            actions.append(("set_positions", r, tuple(new)))
        if absent:
            missed = self._missed.setdefault(r, set())
            missing = tuple(filterfalse(missed.__contains__, absent))
            if missing:
                missed.update(missing)
                actions.append(("on_store_miss", r, missing))
        seen = self._seen.setdefault(r, {})
        fresh = tuple(filterfalse(seen.__contains__, keys))
        if fresh:
            seen.update(dict.fromkeys(fresh))
            actions.append(("on_request_access", r, fresh))
        hooks = self.hooks
        if hooks and keys and self.rng.random() < HOOK_SHARE:
            name = hooks[int(self.rng.random() * len(hooks))]
            actions.append(("hook", name, r, tuple(keys)))
        return actions

    def _request_store(self, state: StateView) -> Run | None:
        """A request offers a run of consecutive keys from a random start
        (a tenth of the time one absent key, inserted idle or in flight):
        the manager looks every one up (get), the request reports its new
        misses among the absent ones and its first-seen keys among them
        all, and the ready ones it did not insert itself are its reused
        keys; then ``_store_step`` stores the absent ones."""
        refs = state.refs
        random_ = self.rng.random
        pool = self.pool
        ref = IN_FLIGHT
        if random_() < 0.1:
            action = self._insert(state)
            if action is None:
                return None
            offered, ref = [action[1]], action[2]
            keys = offered
        else:
            start = int(random_() * pool)
            wanted = (self._wanted() if self.long
                      else SHORTEST + int(random_() * (RUN - SHORTEST + 1)))
            offered = list(range(start, min(pool, start + wanted)))
            keys = list(filterfalse(refs.__contains__, offered))
        r = self._request()
        if len(keys) < len(offered):
            inserted = self._inserted.get(r, ())
            refs_get = state.refs.get
            self._reused.setdefault(r, set()).update(
                k for k in offered if refs_get(k, IN_FLIGHT) >= IDLE and k not in inserted)
        actions = self._report(r, offered, keys)
        if keys:
            self._store, self._evicted = (r, keys, ref, frozenset(offered)), False
        if actions or not keys:
            return ("request", r, actions, offered)
        return self._store_step(state)

    def _store_step(self, state: StateView) -> Run | None:
        """The store under way: its eviction when the cache lacks room,
        then its inserts; None (the store given up) when the manager would
        refuse it (too few idle keys, or the eviction made too little room)."""
        assert self._store is not None
        r, keys, ref, offered = self._store
        refs = state.refs
        room = self._room - len(refs)
        if len(keys) <= room:
            self._store = None
            if any(map(refs.__contains__, keys)):
                return None  # someone else's state: not a request's store any more
            self._inserted.setdefault(r, set()).update(keys)
            if ref == IN_FLIGHT:
                self._keep(self._store_groups, keys)
            return ("insert", keys, ref, r)
        need = len(keys) - room
        if self._evicted or need > len(state.idle):
            self._store = None
            return None
        self._evicted = True
        return ("evict", need, offered)  # every key the request offered is protected

    def _request_read(self, state: StateView) -> Run | None:
        """``_start_run``'s loads, for one request; right after them the
        request reports the keys it sees first (the ready keys a request
        reads that it did not insert are its reused keys)."""
        run = self._start_run(state)
        if run is None:
            return None
        keys: list[int] = run[1]
        r = self._request()
        inserted = self._inserted.get(r, ())
        self._reused.setdefault(r, set()).update(k for k in keys if k not in inserted)
        actions = self._report(r, keys, [])
        if actions:
            self._after = ("request", r, actions, ())
        return run

    def _request_finish(self, state: StateView) -> Run | None:
        """An open request that saw keys finishes: its keys in one group,
        head to tail by position when every one has a position, else in
        the order it saw them; a new request takes its place."""
        index = int(self.rng.random() * OPEN_REQUESTS)
        r = self._open[index]
        seen = self._seen.get(r)
        if not seen:
            return None
        keys = list(seen)
        placed = self._placed.get(r, set())
        if placed.issuperset(keys):
            keys.sort()  # position_of grows with the key
        reused = self._reused.pop(r, set())
        only = self._inserted.pop(r, set()) - reused
        del self._seen[r]
        self._missed.pop(r, None)
        self._open[index] = self._next_request
        self._next_request += 1
        return ("on_request_finished", r, (tuple(keys),), frozenset(only), frozenset(reused))

    def _clear(self, state: StateView) -> Run | None:
        run = super()._clear(state)
        if run is not None:
            self._new_generation()
        return run
