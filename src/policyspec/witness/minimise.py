"""Shrinking a failing trace of caller actions with what the actions mean.

The generic shrinker (``witness/shrink.py``) drops contiguous chunks and
simplifies one argument at a time. Traces from runs of stores and loads
tie actions on the same key together across the trace (insert k ... then
finish_store k), and an eviction of n keys fails only while n of them are
there: ``minimise`` adds steps that know this (forget a key, a life of a key or
a load everywhere; ask each evict for fewer keys and protect fewer), in
rounds with the generic shrinker until a round gains nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence

from policyspec.model.actions import REQUEST_ACTIONS, Action, by_manager
from policyspec.model.request import GROUP_STRIDE
from policyspec.model.state import IDLE, IN_FLIGHT
from policyspec.witness.shrink import shrink

__all__ = [
    "bounded_witness",
    "coarse",
    "drop_keys",
    "drop_lives",
    "drop_loads",
    "fewer_evicted",
    "fewer_protected",
    "keys_of",
    "legalized",
    "minimise",
    "renamed",
    "renumbered",
    "renumbering",
    "without_key",
    "witness",
]

Fails = Callable[[Sequence[Action]], bool]
ROUNDS = 16
MANAGED_EXTRA = 4
"""Steps a witness vLLM's manager could make may add to the shortest one."""


def minimise(trace: Sequence[Action], fails: Fails) -> tuple[Action, ...]:
    """The generic shrinker, then rounds of: forget keys, forget one life
    of a key, evict fewer, shrink again, until a round gains nothing (at most ``ROUNDS``)."""
    # Protecting fewer keys first: at most two replays an evict, and each
    # protected key a shrink would otherwise drop one replay at a time.
    best = shrink(fewer_protected(tuple(trace), fails), fails)
    for _ in range(ROUNDS):
        before = best
        best = drop_keys(best, fails)
        best = drop_lives(best, fails)
        best = drop_loads(best, fails)
        best = fewer_protected(fewer_evicted(best, fails), fails)
        best = shrink(best, fails)
        if best == before:
            break
    return best


def witness(trace: Sequence[Action], fails: Fails) -> tuple[Action, ...]:
    """The trace to show an author: ``minimise``d; one vLLM's manager could
    make when there is such a trace (``model.actions.by_manager``: the
    policy's fault shows on real traffic); keys renumbered 0, 1, 2, ... in
    order of appearance when the failure stays."""
    best = minimise(trace, fails)
    if not by_manager(best):
        starts = (legalized(best), legalized(best, pad=True), legalized(trace))
        for start in dict.fromkeys(starts):
            if by_manager(start) and fails(start):
                managed = minimise(start, lambda t: fails(t) and by_manager(t))
                # A witness the manager could make is worth a few more steps
                # (a store completed rather than inserted idle), not many.
                if by_manager(managed) and len(managed) <= len(best) + MANAGED_EXTRA:
                    best = managed
                    break
    for small in dict.fromkeys((renumbered(best, groups=False), renumbered(best))):
        if small != best and fails(small):
            return small
    return best


class _OutOfTime(Exception):
    """``bounded_witness``'s deadline passed: its shrinking stops at once."""


def bounded_witness(
    trace: Sequence[Action], observed: Fails, unobserved: Fails, tries: int,
    deadline: float | None = None,
) -> tuple[tuple[Action, ...], int]:
    """``witness`` with at most ``tries`` replays, after which no candidate
    is accepted and the shortest trace found stands; and the replays used.
    A count, not a clock, so that the same seed gives the same trace on a
    busy machine; ``deadline`` (``time.monotonic``) is a safety net for the
    run's time budget on a machine too busy for the count: once it has
    passed, shrinking stops at the next candidate (the work between two
    replays of a trace of thousands of actions is seconds) and the smallest
    trace that failed stands. Replays without ``get`` observation (and
    without the second thread) are much cheaper: when the failure shows
    without it, shrink that way and keep the result if it fails observed
    too; otherwise shrink observed."""
    used = 0
    smallest: dict[bool, tuple[Action, ...]] = {}
    """The smallest trace each way of replaying accepted (by observation)."""

    def counted(fails: Fails, watched: bool) -> Fails:
        def bounded(candidate: Sequence[Action]) -> bool:
            nonlocal used
            if deadline is not None and time.monotonic() > deadline:
                raise _OutOfTime
            if used >= tries:
                return False
            used += 1
            if not fails(candidate):
                return False
            kept = smallest.get(watched)
            if kept is None or _size(candidate) < _size(kept):
                smallest[watched] = tuple(candidate)
            return True
        return bounded

    try:
        if counted(unobserved, False)(trace):
            small = witness(trace, counted(unobserved, False))
            if observed(small):
                return small, used
        elif not counted(observed, True)(trace):
            return tuple(trace), used  # no replay shows it (another engine's own check)
        return witness(trace, counted(observed, True)), used
    except _OutOfTime:
        if True in smallest:
            return smallest[True], used
        if False in smallest and observed(smallest[False]):
            return smallest[False], used
        return tuple(trace), used


def legalized(trace: Sequence[Action], *, pad: bool = False) -> tuple[Action, ...]:
    """``trace`` made as vLLM's manager would make it, where it can be: a
    block inserted idle is stored in flight and completed, ``evict(0)`` and
    the removal of a key not in flight go, an eviction asks for at most the
    idle blocks there are (the fast-fail guard) or goes. With ``pad``, an
    eviction that asks for more keeps its n, and stores of new keys complete
    before it until enough blocks are idle (a fault that shows only when
    blocks in flight are all there is to take)."""
    out: list[Action] = []
    refs: dict[int, int] = {}
    gone = 0
    fresh = 1 + max((k for a in trace for k in keys_of(a)), default=-1)
    for action in trace:
        op = action[0]
        if op == "insert":
            if refs.get(action[1]) == IDLE:
                gone -= 1
            if action[2] == IDLE:
                out += [("insert", action[1], IN_FLIGHT, *action[3:]), ("finish_store", action[1])]
                refs[action[1]] = IDLE
                continue
            refs[action[1]] = action[2]
        elif op == "remove":
            if refs.get(action[1]) != IN_FLIGHT:
                continue
            del refs[action[1]]
        elif op == "evict":
            idle = sum(1 for r in refs.values() if r == IDLE) - gone
            while pad and idle < action[1]:
                out += [("insert", fresh, IN_FLIGHT), ("finish_store", fresh)]
                refs[fresh] = IDLE
                fresh += 1
                idle += 1
            n = min(action[1], idle)
            if n < 1:
                continue
            gone += n
            action = ("evict", n, action[2])
        elif op == "clear":
            refs, gone = {}, 0
        elif op in ("finish_store", "end_read"):
            # (A candidate's steps after the one that fails never ran, and
            # may name keys it never stored: they are kept as they are.)
            refs[action[1]] = IDLE if op == "finish_store" else refs.get(action[1], 1) - 1
        elif op == "start_read":
            refs[action[1]] = refs.get(action[1], IDLE) + 1
        out.append(action)
    return tuple(out)


def renumbered(trace: Sequence[Action], *, groups: bool = True) -> tuple[Action, ...]:
    """``trace`` with its keys renamed 0, 1, 2, ... in order of appearance
    (within each KV group; with ``groups`` False all in group 0, whose keys
    print as small numbers). Only right for a policy that does not look at
    key values, hence tried, never assumed."""
    name = renumbering(trace, groups=groups)
    return tuple(renamed(action, name) for action in trace)


def renumbering(trace: Sequence[Action], *, groups: bool = True) -> Callable[[int], int]:
    """The key renaming ``renumbered`` applies to ``trace``, for use on
    other actions too (a metamorphic witness renames its sequence and the
    transformed one alike): keys ``trace`` does not name get the next
    numbers as they come."""
    names: dict[int, int] = {}
    counts: dict[int, int] = {}

    def name(k: int) -> int:
        if k not in names:
            group = k // GROUP_STRIDE if groups else 0
            names[k] = group * GROUP_STRIDE + counts.get(group, 0)
            counts[group] = counts.get(group, 0) + 1
        return names[k]

    for action in trace:
        for k in keys_of(action):
            name(k)
    return name


def renamed(action: Action, name: Callable[[int], int]) -> Action:
    """``action`` with each key ``k`` named ``name(k)``."""
    op = action[0]
    if op == "touch":
        return ("touch", tuple(name(k) for k in action[1]))
    if op == "evict":
        return ("evict", action[1], frozenset(name(k) for k in action[2]))
    if op in ("clear", "clock"):
        return action
    if op == "set_positions":
        return (op, action[1], tuple((name(k), pos) for k, pos in action[2]))
    if op in ("on_store_miss", "on_request_access"):
        return (op, action[1], tuple(name(k) for k in action[2]))
    if op == "hook":
        return (op, action[1], action[2], tuple(name(k) for k in action[3]))
    if op == "on_request_finished":
        return (op, action[1], tuple(tuple(name(k) for k in g) for g in action[2]),
                frozenset(name(k) for k in action[3]), frozenset(name(k) for k in action[4]))
    return (op, name(action[1]), *action[2:])


LIFE = frozenset({"insert", "finish_store", "start_read", "end_read", "remove"})
"""Actions that make up a key's life in the cache (their key is ``action[1]``)."""
KINDS_TO_DROP = (("touch",), ("get",), ("start_read", "end_read"), ("remove",), ("evict",))
"""Kinds of action ``coarse`` tries to drop all at once (the last action stays)."""


def coarse(
    trace: Sequence[Action], fails: Fails, tries: int, deadline: float | None = None,
    keep: Collection[int] = (),
) -> tuple[Action, ...]:
    """A long trace cut down in few replays, for traces too long to shrink
    action by action (the size engine's: thousands of stores, calls of
    thousands of keys): every action of one kind at once (all touches, all
    gets, all loads, all removes, every evict but the last action), then the
    lives of keys by halves, quarters, ... (delta debugging over keys: a key
    whose stores and loads go is absent, and stays named where touches and
    protected sets name it, since a fault behind a size may need the long
    argument and not the stored keys). ``keep``, when given, is tried first:
    only those keys' lives and the last action (the keys a wrong eviction
    returned are often all its fault needs). At most ``tries`` replays, none started after
    ``deadline`` (a replay of thousands of stores takes a while)."""
    best = tuple(trace)
    left = tries

    def better(candidate: tuple[Action, ...]) -> bool:
        nonlocal left
        if deadline is not None and time.monotonic() > deadline:
            left = 0
        if left <= 0 or not candidate or len(candidate) >= len(best):
            return False
        left -= 1
        return fails(candidate)

    if keep:
        wanted = frozenset(keep)
        candidate = (*(a for a in best[:-1] if a[0] in LIFE and a[1] in wanted), best[-1])
        if better(candidate):
            best = candidate
    for kinds in KINDS_TO_DROP:
        last = len(best) - 1
        candidate = tuple(a for i, a in enumerate(best) if i == last or a[0] not in kinds)
        if better(candidate):
            best = candidate
    keys = list(dict.fromkeys(a[1] for a in best[:-1] if a[0] in LIFE))
    chunk = len(keys) // 2
    while chunk >= 1 and left > 0:
        index, progress = 0, False
        while index < len(keys) and left > 0:
            group = frozenset(keys[index:index + chunk])
            last = len(best) - 1
            candidate = tuple(a for i, a in enumerate(best)
                              if i == last or a[0] not in LIFE or a[1] not in group)
            if better(candidate):
                best, keys, progress = candidate, keys[:index] + keys[index + chunk:], True
            else:
                index += chunk
        if not progress:
            chunk //= 2
    return best


def fewer_evicted(trace: tuple[Action, ...], fails: Fails) -> tuple[Action, ...]:
    """Each evict asks for the fewest keys that still fail (from 1 up)."""
    best = trace
    for index, action in enumerate(trace):
        if action[0] != "evict":
            continue
        for n in range(1, action[1]):
            candidate = (*best[:index], ("evict", n, action[2]), *best[index + 1:])
            if fails(candidate):
                best = candidate
                break
    return best


def fewer_protected(trace: tuple[Action, ...], fails: Fails) -> tuple[Action, ...]:
    """Each evict protects nothing, or only keys the trace stores, when the
    failure stays (one replay each, where the generic shrinker drops the
    keys of a protected set one at a time)."""
    best = trace
    stored = {a[1] for a in trace if a[0] == "insert"}
    for index, action in enumerate(trace):
        if action[0] != "evict" or not action[2]:
            continue
        kept = type(action[2])(k for k in action[2] if k in stored)
        for protected in dict.fromkeys((type(action[2])(), kept)):
            if protected == action[2]:
                continue
            candidate = (*best[:index], ("evict", action[1], protected), *best[index + 1:])
            if fails(candidate):
                best = candidate
                break
    return best


def drop_loads(trace: tuple[Action, ...], fails: Fails) -> tuple[Action, ...]:
    """Forget one load at a time (its start and its end together) while the
    failure stays: neither step can go alone, the caller contract ties them."""
    best = trace
    index = 0
    while index < len(best):
        action = best[index]
        if action[0] == "start_read":
            end = next((j for j in range(index + 1, len(best))
                        if best[j][0] == "end_read" and best[j][1] == action[1]), None)
            if end is not None:
                candidate = (*best[:index], *best[index + 1:end], *best[end + 1:])
                if fails(candidate):
                    best = candidate
                    continue
        index += 1
    return best


def drop_keys(trace: Sequence[Action], fails: Fails) -> tuple[Action, ...]:
    """Forget one key at a time (every action on it, and the key in touches
    and protected sets) while the failure stays: runs of stores and loads
    tie actions together that the chunk-wise shrinker cannot cut apart. A
    forgotten idle key leaves every later eviction one key short, so each
    key is also tried with every evict asking for one key fewer."""
    best = tuple(trace)
    for key in dict.fromkeys(k for a in trace for k in keys_of(a)):
        for candidate in (without_key(best, key), _one_fewer(without_key(best, key))):
            if candidate and _size(candidate) < _size(best) and fails(candidate):
                best = candidate
                break
    return best


def drop_lives(trace: Sequence[Action], fails: Fails) -> tuple[Action, ...]:
    """Forget one life of a key (its insert and every later action on it up
    to its next insert or a ``clear``; a key with one life is
    ``drop_keys``'s) while the failure stays: a key stored
    and dropped again (a failed store, an eviction) before it is stored for
    good is padding that neither ``drop_keys`` (the later life matters) nor
    the chunk-wise shrinker (the two ends are apart) can remove."""
    best = tuple(trace)
    index = 0
    while index < len(best):
        action = best[index]
        if action[0] == "insert":
            key = action[1]
            end = next((j for j in range(index + 1, len(best))
                        if best[j][0] == "clear"
                        or (best[j][0] == "insert" and best[j][1] == key)), len(best))
            life = without_key(best[index:end], key)
            candidate = (*best[:index], *life, *best[end:])
            if any(keys_of(a) == (key,) for a in (*best[:index], *best[end:])):
                for smaller in (candidate, _one_fewer(candidate)):
                    if _size(smaller) < _size(best) and fails(smaller):
                        best = smaller
                        break
                else:
                    index += 1
                continue
        index += 1
    return best


def _one_fewer(trace: tuple[Action, ...]) -> tuple[Action, ...]:
    """Every evict asks for one key fewer; one that asked for one goes."""
    return tuple(
        ("evict", a[1] - 1, a[2]) if a[0] == "evict" else a
        for a in trace
        if a[0] != "evict" or a[1] != 1
    )


def _size(trace: Sequence[Action]) -> tuple[int, int]:
    """Shorter first, then fewer keys named."""
    return len(trace), sum(len(keys_of(a)) for a in trace)


def keys_of(action: Action) -> tuple[int, ...]:
    """The keys ``action`` names, in order."""
    op = action[0]
    if op == "touch":
        return tuple(action[1])
    if op == "evict":
        return tuple(sorted(action[2]))
    if op in ("clear", "clock"):
        return ()
    if op == "set_positions":
        return tuple(k for k, _ in action[2])
    if op in ("on_store_miss", "on_request_access"):
        return tuple(action[2])
    if op == "hook":
        return tuple(action[3])
    if op == "on_request_finished":
        return tuple(k for group in action[2] for k in group)
    return (action[1],)


def without_key(trace: Sequence[Action], key: int) -> tuple[Action, ...]:
    """``trace`` with every action on ``key`` gone and ``key`` left out of
    touches and protected sets."""
    out: list[Action] = []
    for action in trace:
        op = action[0]
        if op == "touch":
            out.append(("touch", tuple(k for k in action[1] if k != key)))
        elif op == "evict":
            out.append(("evict", action[1], action[2] - {key}))
        elif op in REQUEST_ACTIONS:
            smaller = _without_in_request(action, key)
            if smaller is not None:
                out.append(smaller)
        elif op in ("clear", "clock") or action[1] != key:
            out.append(action)
    return tuple(out)



def _without_in_request(action: Action, key: int) -> Action | None:
    """A request call without ``key``; None when nothing is left to say
    (a hook of no keys is outside the caller contract; a finish stays)."""
    op, r = action[0], action[1]
    if op == "hook":  # ("hook", name, r, keys)
        rest = tuple(k for k in action[3] if k != key)
        return (op, r, action[2], rest) if rest else None
    if op == "set_positions":
        placed = tuple(p for p in action[2] if p[0] != key)
        return (op, r, placed) if placed else None
    if op == "on_request_finished":
        groups = tuple(g for g in (tuple(k for k in g if k != key) for g in action[2]) if g)
        return (op, r, groups, action[3] - {key}, action[4] - {key})
    keys = tuple(k for k in action[2] if k != key)
    return (op, r, keys) if keys else None
