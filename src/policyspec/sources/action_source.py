"""Random caller-legal actions, drawn straight from the model state.

The engines that do not go through Hypothesis (fast random, metamorphic)
need legal actions cheaply, one per policy call, and states as large and
busy as production's: this source proposes only actions ``is_legal``
accepts, weighted to keep the cache nearly full with keys in flight and
being read. What it remembers is only a hint, always checked against the
state, so a state changed by someone else still gets legal actions.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Mapping, Sequence
from itertools import filterfalse, islice, repeat
from typing import Any, Protocol

from policyspec.model.actions import Action
from policyspec.model.state import IDLE, IN_FLIGHT
from policyspec.sources.sizes import THRESHOLDS

__all__ = ["DEFAULT_WEIGHTS", "KINDS", "RUN", "ActionSource", "Run", "StateView", "actions_of"]

KINDS = (
    "insert", "finish_store", "remove", "start_read", "end_read",
    "touch", "evict", "get", "clear",
)
DEFAULT_WEIGHTS = (200, 200, 15, 80, 90, 160, 100, 60, 1)
"""Relative frequency of each kind, in ``KINDS`` order. A kind that does not
fit the current state (insert into a full cache, finish a store when none
is in flight...) is skipped and another one drawn. Below 7/8 of the
capacity evict gets a tenth of its weight: the manager evicts under
pressure. A drawn clear happens one time in four."""

_ANY = 1 << 62
RUN = 32
"""Most actions one ``draw`` returns."""
SHORTEST = 8
"""Fewest actions a run of stores, loads or gets aims at."""
LONG_RUN = 4_097
LONG_SHORTEST = 63
"""A long source's runs (``ActionSource(long=True)``, the fast engine's long
runs): from LONG_SHORTEST to LONG_RUN actions or keys, half the time one of
``sizes.THRESHOLDS`` exactly."""

Run = tuple[Any, ...]
"""A run of actions of one kind, compact: ``("insert", keys, ref_cnt)``
(every key inserted with that ref_cnt); ``(kind, keys)`` for finish_store,
remove, start_read, end_read and get (one action per key, in order);
``("touch", keys)``, one action; an evict or a clear is a run of one and is
its own action. The request level (request_source.py) adds
``("insert", keys, ref_cnt, r)`` (R9: each insert carries request r),
``("request", r, actions, looked_up)`` (get of each key looked up, then
a request's positions and hooks, its actions listed) and
``("on_request_finished", ...)``, its own action. Keys are lists. The fast
engine works on runs and spells them out only for a failing trace."""

PER_KEY = frozenset({"finish_store", "remove", "start_read", "end_read", "get"})
"""Kinds whose run holds one action per key."""


def actions_of(run: Run) -> list[Action]:
    """The actions of ``run``, in order."""
    kind = run[0]
    if kind == "insert":
        if len(run) == 4:  # R9: the storing request's context (request_source.py)
            return list(zip(repeat("insert"), run[1], repeat(run[2]), repeat(run[3])))
        return list(zip(repeat("insert"), run[1], repeat(run[2])))
    if kind == "request":  # the manager's lookups, then the request's own actions
        return [*zip(repeat("get"), run[3]), *run[2]]
    if kind in PER_KEY:
        return list(zip(repeat(kind), run[1]))
    if kind == "touch":
        return [("touch", tuple(run[1]))]
    return [run]


class StateView(Protocol):
    """What ``ActionSource`` reads of a state."""

    @property
    def refs(self) -> Mapping[int, int]: ...

    @property
    def idle(self) -> Collection[int]: ...


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
        with_touch: bool = True,
        weights: Sequence[int] = DEFAULT_WEIGHTS,
        long: bool = False,
    ) -> None:
        self.rng = rng
        self.pool = pool
        self.capacity = capacity
        self.long = long
        """Runs, touches, hook key lists and protected sets of hundreds to
        thousands of keys, evictions of as many (``_wanted``)."""
        self.with_clear = with_clear
        self.weights = list(weights)
        if not with_clear:
            self.weights[-1] = 0
        if not with_touch:  # vLLM 0.34 (R10) has no touch
            self.weights[KINDS.index("touch")] = 0
        self._room = min(pool, capacity)
        self._pressure = self._room - self._room // 8
        self._storing: list[int] = []
        """Keys this source inserted in flight (a hint, checked on use)."""
        self._reading: list[int] = []
        """One entry per load this source started (a hint, checked on use)."""
        span = pool + 4
        self._key_of_byte = [byte * span >> 8 for byte in range(256)] if span <= 256 else []
        """A key for each random byte, for the random keys of a touch run.
        Keys are not equally likely: their weights differ by at most
        ceil(256 / span) / floor(256 / span) (3/2 for the default 100 keys),
        which does not matter for a touch; a float drawn per key in Python
        is much slower (benchmarks/results.txt)."""
        self._store_groups: list[list[int]] = []
        """The keys of each run of stores this source drew (a request's
        stores, completed or failed together), until taken; checked on use."""
        self._load_groups: list[list[int]] = []
        """The keys of each run of loads this source drew, until taken."""
        makers: tuple[Callable[[StateView], Action | None], ...] = (
            self._insert, self._finish_store, self._remove, self._start_read,
            self._end_read, self._touch, self._evict, self._get, self._clear,
        )
        # One slot per unit of weight, so drawing a kind is one index.
        calm = list(self.weights)
        calm[6] = -(-calm[6] // 10)
        self._pressed = [m for m, w in zip(makers, self.weights, strict=True) for _ in range(w)]
        self._calm = [m for m, w in zip(makers, calm, strict=True) for _ in range(w)]
        if not self._pressed:
            raise ValueError("ActionSource: every weight is 0")
        runs: tuple[Callable[[StateView], Run | None], ...] = (
            self._insert_run, self._finish_run, self._remove_run, self._start_run,
            self._end_run, self._touch_run, self._evict, self._get_run, self._clear,
        )
        self._run_tables(runs, self.weights)

    def _run_tables(
        self, runs: Sequence[Callable[[StateView], Run | None]], weights: Sequence[int]
    ) -> None:
        """The tables ``draw`` picks a run maker from: one slot per unit of
        weight; when the cache is not under pressure, evict (the seventh
        kind) gets a tenth of its weight."""
        calm = list(weights)
        calm[6] = -(-calm[6] // 10)
        self._runs_pressed = [r for r, w in zip(runs, weights, strict=True) for _ in range(w)]
        self._runs_calm = [r for r, w in zip(runs, calm, strict=True) for _ in range(w)]

    def next(self, state: StateView) -> Action:
        """One legal action for ``state``."""
        random_ = self.rng.random
        table = self._pressed if len(state.refs) >= self._pressure else self._calm
        size = len(table)
        while True:
            action = table[int(random_() * size)](state)
            if action is not None:
                return action

    def draw(self, state: StateView) -> Run:
        """A run of legal actions of one kind, each legal after the ones
        before it, the way the manager works on a request: a lookup gets a
        prefix of keys, a store inserts the missing ones together, they
        complete together (or fail and are removed together), a load reads
        a prefix, the loads end together, a touch names a whole prefix.
        Evictions and clears come alone. One draw serves up to ``RUN``
        actions (and a touch up to ``RUN`` keys): the fast engine's speed.
        The run is compact (see ``Run``); ``actions_of`` spells it out."""
        random_ = self.rng.random
        table = self._runs_pressed if len(state.refs) >= self._pressure else self._runs_calm
        size = len(table)
        while True:
            run = table[int(random_() * size)](state)
            if run is not None:
                return run

    # -- one maker per kind: an action, or None when the kind does not fit ----

    def _insert(self, state: StateView) -> Action | None:
        refs = state.refs
        if len(refs) >= self._room:
            return None
        random_, pool = self.rng.random, self.pool
        for _ in range(4):
            key = int(random_() * pool)
            if key not in refs:
                if random_() < 0.1:
                    return ("insert", key, IDLE)
                self._hints(self._storing, [key])
                return ("insert", key, IN_FLIGHT)
        return None

    def _finish_store(self, state: StateView) -> Action | None:
        key = self._take(self._storing, state, IN_FLIGHT, IN_FLIGHT)
        return None if key is None else ("finish_store", key)

    def _remove(self, state: StateView) -> Action | None:
        key = self._present(state, IN_FLIGHT, _ANY)
        return None if key is None else ("remove", key)

    def _start_read(self, state: StateView) -> Action | None:
        key = self._present(state, IDLE, _ANY)
        if key is None:
            return None
        self._hints(self._reading, [key])
        return ("start_read", key)

    def _end_read(self, state: StateView) -> Action | None:
        key = self._take(self._reading, state, IDLE + 1, _ANY)
        return None if key is None else ("end_read", key)

    def _touch(self, state: StateView) -> Action | None:
        """Half the time a run of consecutive keys (a request's prefix), else
        any keys: present in any state, absent, repeated."""
        random_ = self.rng.random
        size = int(random_() * 6)
        span = self.pool + 4
        if random_() < 0.5:
            start = int(random_() * (span - size))
            return ("touch", tuple(range(start, start + size)))
        return ("touch", tuple([int(random_() * span) for _ in range(size)]))

    def _evict(self, state: StateView) -> Action | None:
        """Mostly a few keys (a store under pressure); sometimes many, now
        and then more than are idle (a None answer) or zero."""
        random_ = self.rng.random
        roll = random_()
        if roll < 0.04:
            n = 0
        elif roll < 0.90:
            n = 1 + int(random_() * 4)
        elif roll < 0.97:
            n = int(random_() * (len(state.idle) + 2))
            if self.long and random_() < 0.5:
                n = min(self._wanted(), len(state.idle) + 1)
        else:
            n = len(state.idle) + 1
        if self.long and random_() < 0.25:
            return ("evict", n, self._protected_many(state))
        protected = frozenset([self._any_key(state) for _ in range(int(random_() * 4))])
        return ("evict", n, protected)

    def _wanted(self) -> int:
        """A long source's run length (``long``)."""
        rng = self.rng
        if rng.random() < 0.5:
            return rng.choice(THRESHOLDS)
        return LONG_SHORTEST + int(rng.random() * (LONG_RUN - LONG_SHORTEST + 1))

    def _protected_many(self, state: StateView) -> frozenset[int]:
        """A long protected set: the least recent idle keys but a few (or
        none), then any keys, hundreds to thousands in all."""
        wanted = self._wanted()
        idle = state.idle
        oldest = list(islice(idle, max(0, min(wanted, len(idle) - 1 - int(self.rng.random() * 4)))))
        if self.rng.random() < 0.5:
            oldest = []
        span, random_ = self.pool + 4, self.rng.random
        return frozenset([*oldest, *(int(random_() * span) for _ in range(wanted - len(oldest)))])

    def _get(self, state: StateView) -> Action | None:
        return ("get", self._any_key(state))

    def _clear(self, state: StateView) -> Action | None:
        if not (self.with_clear and state.refs) or self.rng.random() >= 0.25:
            return None
        return ("clear",)

    # -- runs of one kind (draw): a compact Run, or None when the kind does
    # not fit. The fast engine spends much of its time here: measured
    # choices between C-level helpers (filterfalse, islice) and list
    # comprehensions, whichever was faster.

    def _insert_run(self, state: StateView) -> Run | None:
        """Absent keys from a random start on (a request's new blocks). When
        they do not fit, the manager's eviction comes first: evict what is
        missing, protecting the request's keys (spec/sources.md C6)."""
        refs = state.refs
        random_ = self.rng.random
        if random_() < 0.1:
            action = self._insert(state)  # one block, sometimes inserted idle
            return None if action is None else ("insert", [action[1]], action[2])
        pool = self.pool
        start = int(random_() * pool)
        wanted = self._wanted() if self.long else SHORTEST + int(random_() * (RUN - SHORTEST + 1))
        window = range(start, min(pool, start + 2 * (LONG_RUN if self.long else RUN)))
        keys = list(islice(filterfalse(refs.__contains__, window), wanted))
        if not keys:
            return None
        room = self._room - len(refs)
        if len(keys) > room:
            return ("evict", len(keys) - room, frozenset(range(start, keys[-1] + 1)))
        self._keep(self._store_groups, keys)
        return ("insert", keys, IN_FLIGHT)

    def _finish_run(self, state: StateView) -> Run | None:
        """The stores of one run this source drew, completed together."""
        group = self._group(self._store_groups)
        if group is None:
            # Stores this source did not start (another source's state): a
            # few tries now and then, not on every draw.
            action = self._finish_store(state) if self.rng.random() < 0.125 else None
            return None if action is None else ("finish_store", [action[1]])
        refs_get = state.refs.get
        keys = [key for key in group if refs_get(key) == IN_FLIGHT]
        return ("finish_store", keys) if keys else None

    def _remove_run(self, state: StateView) -> Run | None:
        """Half the time a failed store: the stores of one run this source
        drew, removed together; else one present key in any state (the API
        allows it)."""
        if self.rng.random() < 0.5:
            action = self._remove(state)
            return None if action is None else ("remove", [action[1]])
        group = self._group(self._store_groups)
        if group is None:
            return None
        refs_get = state.refs.get
        keys = [key for key in group if refs_get(key) == IN_FLIGHT]
        return ("remove", keys) if keys else None

    def _start_run(self, state: StateView) -> Run | None:
        """Loads of the ready keys in a run of consecutive keys (a prefix)."""
        refs = state.refs
        random_ = self.rng.random
        start = int(random_() * self.pool)
        wanted = self._wanted() if self.long else SHORTEST + int(random_() * (RUN - SHORTEST + 1))
        window = range(start, start + wanted)
        refs_get = refs.get
        keys = [key for key in window if refs_get(key, IN_FLIGHT) >= IDLE]
        if not keys:
            return None
        self._keep(self._load_groups, keys)
        return ("start_read", keys)

    def _end_run(self, state: StateView) -> Run | None:
        """The loads of one run this source drew, ending together (its keys
        are distinct; a key also read by another run keeps that load)."""
        group = self._group(self._load_groups)
        if group is None:
            action = self._end_read(state) if self.rng.random() < 0.125 else None
            return None if action is None else ("end_read", [action[1]])
        refs_get = state.refs.get
        keys = [key for key in group if refs_get(key, IDLE) > IDLE]
        return ("end_read", keys) if keys else None

    def _touch_run(self, state: StateView) -> Run | None:
        """One touch of up to ``RUN`` keys: a prefix, or any keys."""
        random_ = self.rng.random
        span = self.pool + 4
        # No longer than the key span: a small cache (pool + 4 < RUN) would
        # otherwise start the prefix at a negative key.
        size = (min(self._wanted(), span) if self.long
                else int(random_() * (min(RUN, span) + 1)))
        # The keys are a list in the run (a tuple in its action): tuples of
        # up to 19 items that die in bulk at the end of every example fill
        # CPython's tuple free lists, a few megabytes held until a full
        # garbage collection; a list's items are given back at once.
        if random_() < 0.5:
            start = int(random_() * (span - size))
            return ("touch", list(range(start, start + size)))
        if self._key_of_byte:  # one random byte per key, mapped in C
            return ("touch", list(map(self._key_of_byte.__getitem__, self.rng.randbytes(size))))
        return ("touch", [int(random_() * span) for _ in range(size)])

    def _get_run(self, state: StateView) -> Run | None:
        """A lookup: get of consecutive keys (a request's prefix)."""
        random_ = self.rng.random
        start = int(random_() * (self.pool + 4))
        wanted = self._wanted() if self.long else SHORTEST + int(random_() * (RUN - SHORTEST + 1))
        end = min(self.pool + 4, start + wanted)
        return ("get", list(range(start, end))) if end > start else None

    def _group(self, groups: list[list[int]]) -> list[int] | None:
        """A group from a random place (removed), or None."""
        if not groups:
            return None
        index = int(self.rng.random() * len(groups))
        groups[index], groups[-1] = groups[-1], groups[index]
        return groups.pop()

    def _keep(self, groups: list[list[int]], keys: list[int]) -> None:
        groups.append(keys)
        if len(groups) > self.pool:  # stale groups pile up when never taken
            del groups[: len(groups) // 2]

    def _hints(self, hints: list[int], keys: list[int]) -> None:
        hints.extend(keys)
        if len(hints) > 8 * self.pool:  # stale hints pile up when never taken
            del hints[: len(hints) // 2]

    # -- keys -------------------------------------------------------------------


    def _take(self, hints: list[int], state: StateView, low: int, high: int) -> int | None:
        """A key from ``hints`` (removed from it) whose ref_cnt is in
        [low, high]; stale hints are dropped. Without one, any such key."""
        refs = state.refs
        random_ = self.rng.random
        while hints:
            index = int(random_() * len(hints))
            hints[index], hints[-1] = hints[-1], hints[index]
            key = hints.pop()
            ref = refs.get(key)
            if ref is not None and low <= ref <= high:
                return key
        return self._present(state, low, high)

    def _present(self, state: StateView, low: int, high: int) -> int | None:
        """A present key with ``low <= ref_cnt <= high``, uniformly chosen
        among them (a few tries, then None: the caller draws another kind)."""
        refs = state.refs
        if not refs:
            return None
        random_, pool = self.rng.random, self.pool
        for _ in range(4):
            key = int(random_() * pool)
            ref = refs.get(key)
            if ref is not None and low <= ref <= high:
                return key
        if len(refs) * 4 > pool:
            return None  # dense: another draw will do
        key = self.rng.choice(list(refs))
        return key if low <= refs[key] <= high else None

    def _any_key(self, state: StateView) -> int:
        """Any key; half the time an idle one when there is one."""
        random_, pool = self.rng.random, self.pool
        idle = state.idle
        if idle and random_() < 0.5:
            for _ in range(3):
                key = int(random_() * pool)
                if key in idle:
                    return key
        return int(random_() * (pool + 4))
