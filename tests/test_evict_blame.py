"""An exact profile sees a wrong order only through ``evict``, and the
diagnosis (``witness.explain.culprit``) probes each prefix of a witness
through the policy's own ``evict`` to name the operation behind it. When the
fault is in ``evict`` itself, those probes must not make an earlier
operation look guilty (spec/arc.md and spec/lru.md, Attribution):

* a batch ``evict(n)`` that the same state's n single evicts get right is
  evict's own fault, whatever a batch probe read earlier;
* an ARC whose choice of list is wrong from the fresh policy on, with a
  target that no operation could have moved, breaks ARC-EVICT-ORDER, not
  the insert or finish that first gave it two lists to choose from;
* the faults the diagnosis does pin on an earlier operation stay pinned
  there: tests/test_arc_corpus.py's attribution cases are the control.

Each fault is tried on several traces (sizes, batch lengths, the call that
fills T2), under every profile whose refinement it concerns.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import pytest

from policyspec.adapters import subject_for_class
from policyspec.model.actions import Action
from policyspec.profiles import get_profile
from policyspec.reference import ARCCachePolicy, LRUCachePolicy
from policyspec.reference.arc import ARC034CachePolicy
from policyspec.reference.lru033 import LRU033CachePolicy
from policyspec.reference.lru034 import LRU034CachePolicy
from policyspec.subject import Subject
from policyspec.witness.explain import Placement, culprit, placed_culprit
from policyspec.witness.reproduce import failure_of

NONE: frozenset[int] = frozenset()


def _skip_first(idle: Sequence[Any], n: int, protected: Collection[Any]) -> list[Any] | None:
    """The batch fault shared by the LRUs below: for n >= 2 the least recent
    eligible key is passed over when a later one can take its place."""
    eligible = [k for k in idle if k not in protected]
    if len(eligible) < n:
        return None
    return eligible[1:n + 1] if n >= 2 and len(eligible) > n else eligible[:n]


class SeedLRUBatchSkipsFirst(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        victims = _skip_first(list(self.evictable_blocks), n, protected)
        if victims is None:
            return None
        result = [(key, self.blocks.pop(key)) for key in victims]
        for key in victims:
            del self.evictable_blocks[key]
        return result


class LRU034BatchSwapsFirstTwo(LRU034CachePolicy[Any, Any]):
    """For n >= 2 the two least recent victims come out swapped."""

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        victims = super().evict(n, protected)
        if victims is not None and len(victims) >= 2:
            victims[0], victims[1] = victims[1], victims[0]
        return victims


class SeedLRURefusesBatches(LRUCachePolicy[Any, Any]):
    """Refuses any evict of two keys or more: a liveness fault, of evict's own."""

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        return None if n >= 2 else super().evict(n, protected)


class ARCRefusesBatches(ARCCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        return None if n >= 2 else super().evict(n, protected)


def _arc_evict(policy: Any, n: int, protected: Collection[Any], *, prefer_t1: Any,
               t1_step: int = 1) -> list[tuple[Any, Any]] | None:
    """ARC's choose-then-commit evict with the rule ``prefer_t1(t1_left,
    floor)`` and T1's count lowered by ``t1_step`` per T1 victim."""
    if n == 0:
        return []
    t1 = [(k, b) for k, b in policy.t1.items() if b.ref_cnt == 0 and k not in protected]
    t2 = [(k, b) for k, b in policy.t2.items() if b.ref_cnt == 0 and k not in protected]
    if len(t1) + len(t2) < n:
        return None
    floor, t1_left = int(policy.target_t1_size), len(policy.t1)
    picks: list[tuple[Any, Any, bool]] = []
    while len(picks) < n:
        if (prefer_t1(t1_left, floor) and t1) or not t2:
            picks.append((*t1.pop(0), True))
            t1_left -= t1_step
        else:
            picks.append((*t2.pop(0), False))
    result: list[tuple[Any, Any]] = policy._commit(picks)
    return result


class ARCBatchCountsT1Twice(ARCCachePolicy[Any, Any]):
    """Each T1 victim lowers T1's count by two: a batch turns to T2 early."""

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        return _arc_evict(self, n, protected, prefer_t1=lambda c, t: c >= t, t1_step=2)


class ARCComparesTheWrongWay(ARCCachePolicy[Any, Any]):
    """T1 gives only while its count is below the target: at the target of 0
    a fresh ARC starts with, T2 always gives first."""

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        return _arc_evict(self, n, protected, prefer_t1=lambda c, t: c < t)


class ARC034ComparesTheWrongWay(ARC034CachePolicy[Any, Any]):
    """The same rule fault in vLLM 0.34's ARC (no touch: T2 fills when a
    request that reused a key finishes)."""

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        return _arc_evict(self, n, protected, prefer_t1=lambda c, t: c < t)


class ARCTargetStartsAtCapacity(ARCCachePolicy[Any, Any]):
    """Starts as if every ghost hit had been in B1: T2 gives first."""

    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.target_t1_size = float(cache_capacity)


def stored(*keys: int) -> list[Action]:
    return [("insert", k, 0) for k in keys]


def finished(r: int, *keys: int) -> list[Action]:
    """vLLM 0.34's second access: a request that reused ``keys`` finishes."""
    return [("on_request_finished", r, (tuple(keys),), frozenset(), frozenset(keys))]


CASES: list[tuple[str, type, str, int, list[Action], str]] = [
    # A batch fault, whose singles are right.
    ("seed LRU, evict(2)", SeedLRUBatchSkipsFirst, "lru", 8,
     [*stored(0, 1, 2), ("evict", 2, NONE)], "LRU-EVICT-ORDER"),
    ("seed LRU, evict(3) after a touch", SeedLRUBatchSkipsFirst, "lru", 4,
     [*stored(0, 1, 2), ("touch", (0,)), *stored(3), ("evict", 3, NONE)], "LRU-EVICT-ORDER"),
    ("vLLM 0.34 LRU, evict(2)", LRU034BatchSwapsFirstTwo, "lru-0.34", 8,
     [*stored(0, 1, 2), ("evict", 2, NONE)], "LRU033-EVICT-ORDER"),
    ("vLLM 0.34 LRU, evict(3) after a finish", LRU034BatchSwapsFirstTwo, "lru-0.34", 64,
     [*stored(0, 1, 2, 3), *finished(5, 1), ("evict", 3, NONE)], "LRU033-EVICT-ORDER"),
    ("ARC, evict(3) after a touch", ARCBatchCountsT1Twice, "arc", 8,
     [*stored(0, 1, 2, 3), ("touch", (3,)), ("evict", 3, NONE)], "ARC-EVICT-ORDER"),
    ("ARC, evict(3) at capacity 4", ARCBatchCountsT1Twice, "arc", 4,
     [*stored(0, 1, 2, 3), ("touch", (3,)), ("evict", 3, NONE)], "ARC-EVICT-ORDER"),
    ("ARC, evict(4) after a ghost hit", ARCBatchCountsT1Twice, "arc", 8,
     [*stored(0, 1, 2, 3, 4, 5), ("evict", 1, NONE), ("touch", (0, 5)), ("evict", 4, NONE)],
     "ARC-EVICT-ORDER"),
    # A batch refusal, whose singles succeed: the refusal is evict's own.
    ("seed LRU, a refused evict(3)", SeedLRURefusesBatches, "lru", 8,
     [*stored(0, 1, 2, 3), ("touch", (0,)), ("evict", 3, NONE)], "LRU-LIVENESS"),
    ("ARC, a refused evict(2)", ARCRefusesBatches, "arc", 8,
     [*stored(0, 1, 2), ("touch", (1,)), ("evict", 2, NONE)], "ARC-LIVENESS"),
    # A rule fault from the start, the target never moved.
    ("ARC, T2 filled by a touch", ARCComparesTheWrongWay, "arc", 8,
     [*stored(0, 1), ("touch", (1,)), ("evict", 1, NONE)], "ARC-EVICT-ORDER"),
    ("ARC, T2 filled, then an insert", ARCComparesTheWrongWay, "arc", 4,
     [*stored(0), ("touch", (0,)), *stored(1), ("evict", 1, NONE)], "ARC-EVICT-ORDER"),
    ("vLLM 0.34 ARC, T2 filled by a finish", ARC034ComparesTheWrongWay, "arc-0.34", 8,
     [*stored(0, 1), *finished(3, 1), ("evict", 1, NONE)], "ARC-EVICT-ORDER"),
    ("vLLM 0.34 ARC, a finish, then an insert", ARC034ComparesTheWrongWay, "arc-0.34", 8,
     [*stored(0), *finished(3, 0), *stored(1), ("evict", 1, NONE)], "ARC-EVICT-ORDER"),
    ("ARC, a target that starts at the capacity", ARCTargetStartsAtCapacity, "arc", 8,
     [*stored(0, 1), ("touch", (1,)), ("evict", 1, NONE)], "ARC-EVICT-ORDER"),
]


@pytest.mark.parametrize(
    ("policy", "profile_name", "capacity", "trace", "expected"),
    [case[1:] for case in CASES], ids=[case[0] for case in CASES],
)
def test_a_fault_of_evict_is_named_at_evict(
    policy: type, profile_name: str, capacity: int, trace: list[Action], expected: str,
) -> None:
    subject: Subject = subject_for_class(policy)
    profile = get_profile(profile_name)
    refinement = profile.refinement
    assert refinement is not None
    found = failure_of(subject, profile, capacity, trace, observe=False)
    assert found is not None, "the trace must fail"
    seen = found.requirement
    assert seen in (refinement.order_requirement, refinement.liveness_requirement), seen
    assert culprit(subject, profile, capacity, trace, seen) == expected


def _placed(policy: type, profile_name: str, capacity: int, trace: list[Action]) -> Placement:
    """Where ``trace``, which must fail at an evict under the profile's
    order requirement, is blamed on ``policy``."""
    subject: Subject = subject_for_class(policy)
    profile = get_profile(profile_name)
    assert profile.refinement is not None
    found = failure_of(subject, profile, capacity, trace, observe=False)
    assert found is not None, "the trace must fail"
    assert found.requirement == profile.refinement.order_requirement, found
    return placed_culprit(subject, profile, capacity, trace, found.requirement)


# -- a second look at an adaptation (spec/arc.md, Attribution) ------------------
# A target that differs after a ghost hit is also what a policy shows that
# adapts right but starts (or is cleared) elsewhere, or reads the target
# otherwise in evict; and a ghost hit that moves nothing is also what a policy
# shows that had lost the ghost. A calibration on a fresh policy, and trials
# with other ghosts, tell them apart.


def _offset_start(base: Any, name: str) -> type:
    """``base`` whose target starts at 1: it acts as 0 until a ghost hit."""

    def __init__(self: Any, cache_capacity: int) -> None:
        base.__init__(self, cache_capacity)
        self.target_t1_size = 1.0

    return type(name, (base,), {"__init__": __init__})


def _cleared_to_one(base: Any, name: str) -> type:
    def clear(self: Any) -> None:
        base.clear(self)
        self.target_t1_size = 1.0

    return type(name, (base,), {"clear": clear})


def _reads_above(base: Any, name: str) -> type:
    """T1 gives only while its count is above the target (``>`` for ``>=``):
    as a target one higher, once a ghost hit moved it off 0."""

    def evict(self: Any, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        return _arc_evict(self, n, protected, prefer_t1=lambda c, t: c > t)

    return type(name, (base,), {"evict": evict})


def _clear_keeps_target(base: Any, name: str) -> type:
    """A clear that empties the lists but keeps the adapted target."""

    def clear(self: Any) -> None:
        target = self.target_t1_size
        base.clear(self)
        self.target_t1_size = target

    return type(name, (base,), {"clear": clear})


def _grows_twice(base: Any, name: str) -> type:
    """A B1 hit moves the target two steps: the adaptation's own fault."""

    def _grow_target(self: Any) -> None:
        base._grow_target(self)
        base._grow_target(self)

    return type(name, (base,), {"_grow_target": _grow_target})


def _trims_early(base: Any, name: str) -> type:
    """A ghost list is trimmed one key below the capacity: its oldest ghost
    is gone while the spec still adapts to it."""

    def _commit(self: Any, picks: list[tuple[Any, Any, bool]]) -> list[tuple[Any, Any]]:
        result: list[tuple[Any, Any]] = base._commit(self, picks)
        for ghosts in (self.b1, self.b2):
            while len(ghosts) >= self.cache_capacity:
                ghosts.popitem(last=False)
        return result

    return type(name, (base,), {"_commit": _commit})


def _trims_by_remainder(base: Any, name: str) -> type:
    """A ghost list is trimmed by ``len % capacity`` keys (for ``len -
    capacity``): every ghost goes, unless one evict filled the list to a
    multiple of the capacity."""

    def _commit(self: Any, picks: list[tuple[Any, Any, bool]]) -> list[tuple[Any, Any]]:
        result: list[tuple[Any, Any]] = base._commit(self, picks)
        for ghosts in (self.b1, self.b2):
            for _ in range(len(ghosts) % self.cache_capacity):
                ghosts.popitem(last=False)
        return result

    return type(name, (base,), {"_commit": _commit})


def _keeps_no_ghost(base: Any, name: str) -> type:
    """Every ghost dropped at once: no probe tells it from a hook that
    ignores ghosts (below), so the adaptation stays named."""

    def _commit(self: Any, picks: list[tuple[Any, Any, bool]]) -> list[tuple[Any, Any]]:
        result: list[tuple[Any, Any]] = base._commit(self, picks)
        self.b1.clear()
        self.b2.clear()
        return result

    return type(name, (base,), {"_commit": _commit})


def _ghost_hit(profile_name: str, r: int, *keys: int) -> list[Action]:
    """A second access of evicted keys: touch (0.33) or a store miss (0.34)."""
    if profile_name == "arc":
        return [("touch", tuple(keys))]
    return [("on_store_miss", r, tuple(keys))]


def _reuse(profile_name: str, r: int, *keys: int) -> list[Action]:
    """A second access of resident keys, which moves them to T2."""
    return [("touch", tuple(keys))] if profile_name == "arc" else finished(r, *keys)


def _one_hit(profile_name: str) -> list[Action]:
    """One B1 hit (spec target 1, which acts as 0), then T1 = [1], T2 = [2]:
    the spec evicts 1 from T1; a target acting as 2 evicts 2 from T2."""
    return [*stored(0, 1, 2), ("evict", 1, NONE), *_ghost_hit(profile_name, 10, 0),
            *_reuse(profile_name, 11, 2), ("evict", 1, NONE)]


def _two_hits(profile_name: str) -> list[Action]:
    """Four ghosts made by one evict (a whole capacity of 4), a hit of the
    two oldest (spec target 2), then T1 = [4], T2 = [5]: the spec evicts 5
    from T2; a target that moved once, or not at all, evicts 4 from T1."""
    return [*stored(0, 1, 2, 3), ("evict", 4, NONE), *_ghost_hit(profile_name, 10, 0, 1),
            *stored(4, 5), *_reuse(profile_name, 11, 5), ("evict", 1, NONE)]


def _hits_of_two(profile_name: str) -> list[Action]:
    """Two ghosts made by one evict (fewer than a capacity of 3 or more),
    both hit (spec target 2), then T1 = [4], T2 = [5]: the spec evicts 5
    from T2; a target that never moved evicts 4 from T1."""
    return [*stored(0, 1), ("evict", 2, NONE), *_ghost_hit(profile_name, 10, 0, 1),
            *stored(4, 5), *_reuse(profile_name, 11, 5), ("evict", 1, NONE)]


_ADAPT = {"arc": "ARC-GHOST-ADAPT", "arc-0.34": "ARC-STORE-MISS-ADAPT"}

_BASES = {"arc": ARCCachePolicy, "arc-0.34": ARC034CachePolicy}

SECOND_LOOK: list[tuple[str, Any, str, int, Any, str]] = []
for _profile, _base in _BASES.items():
    SECOND_LOOK += [
        (f"{_profile}: a target that starts at 1", _offset_start(_base, "StartsAtOne"),
         _profile, 8, _one_hit(_profile), "ARC-EVICT-ORDER"),
        (f"{_profile}: the same at capacity 16", _offset_start(_base, "StartsAtOne"),
         _profile, 16, _one_hit(_profile), "ARC-EVICT-ORDER"),
        (f"{_profile}: a rule that compares with >", _reads_above(_base, "ReadsAbove"),
         _profile, 8, _one_hit(_profile), "ARC-EVICT-ORDER"),
        (f"{_profile}: a clear that leaves the target at 1", _cleared_to_one(_base, "Clears"),
         _profile, 8, [*stored(9), ("clear",), *_one_hit(_profile)], "ARC-CLEAR-RESET"),
        (f"{_profile}: a clear that keeps an adapted target", _clear_keeps_target(_base, "K"),
         _profile, 8, [*stored(5, 6, 7), ("evict", 3, NONE), *_ghost_hit(_profile, 20, 5),
                       *_ghost_hit(_profile, 21, 6), ("clear",), *_one_hit(_profile)],
         "ARC-CLEAR-RESET"),
        (f"{_profile}: a clear, and a rule that compares with >", _reads_above(_base, "RA"),
         _profile, 8, [*stored(9), ("clear",), *_one_hit(_profile)], "ARC-EVICT-ORDER"),
        (f"{_profile}: an adaptation that moves twice", _grows_twice(_base, "GrowsTwice"),
         _profile, 8, _one_hit(_profile), _ADAPT[_profile]),
        (f"{_profile}: ghosts trimmed one early", _trims_early(_base, "TrimsEarly"),
         _profile, 4, _two_hits(_profile), "ARC-EVICT-GHOSTS"),
        *((f"{_profile}: ghosts trimmed by the remainder at capacity {c}",
           _trims_by_remainder(_base, "Rem"), _profile, c, trace(_profile), "ARC-EVICT-GHOSTS")
          for c, trace in ((3, _hits_of_two), (4, _hits_of_two), (5, _hits_of_two),
                           (8, _two_hits), (16, _two_hits))),
        (f"{_profile}: no ghost kept at all", _keeps_no_ghost(_base, "NoGhost"),
         _profile, 8, _two_hits(_profile), _ADAPT[_profile]),
        (f"{_profile}: no ghost kept at capacity 3", _keeps_no_ghost(_base, "NoGhost"),
         _profile, 3, _hits_of_two(_profile), _ADAPT[_profile]),
    ]


@pytest.mark.parametrize(
    ("policy", "profile_name", "capacity", "trace", "expected"),
    [case[1:] for case in SECOND_LOOK], ids=[case[0] for case in SECOND_LOOK],
)
def test_a_target_or_ghost_fault_is_told_from_the_adaptation(
    policy: type, profile_name: str, capacity: int, trace: list[Action], expected: str,
) -> None:
    placed = _placed(policy, profile_name, capacity, trace)
    assert placed.requirement == expected, placed
    if expected != _ADAPT[profile_name]:
        assert placed.note, "a moved blame says why"


# An LRU refresh blamed (a finish or an access whose key kept its place) is
# also what an evict shows that ranks a key by a rank it held earlier, as a
# lazily cleaned heap that takes an old entry for a current one; a trial
# with a key removed and stored again, which no refresh touches, tells them
# apart (spec/lru033.md, Attribution).


def _ranks_by_past(base: Any, name: str) -> type:
    """Evicts by the least rank each key was ever given (kept across its
    removal): every refresh seems not to take."""

    def _rerank(self: Any, key: Any, rank: Any) -> None:
        past = self.__dict__.setdefault("past", {})
        past[key] = min(past.get(key, rank), rank)
        base._rerank(self, key, rank)

    def evict(self: Any, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        past = self.__dict__.setdefault("past", {})
        self.idle.sort(key=lambda entry: (past.get(entry[1], entry[0]), entry[1]))
        victims: list[tuple[Any, Any]] | None = base.evict(self, n, protected)
        self.idle.sort()
        return victims

    return type(name, (base,), {"_rerank": _rerank, "evict": evict})


def _finish_commits_nothing(base: Any, name: str) -> type:
    def on_request_finished(self: Any, *args: Any) -> None:
        return None

    return type(name, (base,), {"on_request_finished": on_request_finished})


def _request_stored(r: int, *keys: int) -> list[Action]:
    return [("insert", k, 0, r) for k in keys]


_LRU_REFRESH = [*_request_stored(2, 0), *_request_stored(3, 1),
                ("on_request_finished", 2, ((0,),), frozenset({0}), frozenset()),
                ("evict", 1, NONE)]
"""0 refreshed by its request's finish: the spec evicts 1 first."""

_LRU_REINSERTED = [*_request_stored(2, 0), *_request_stored(3, 1), ("remove", 0),
                   *_request_stored(4, 0), *_request_stored(5, 2),
                   ("on_request_finished", 4, ((0,),), frozenset({0}), frozenset()),
                   ("evict", 1, NONE)]
"""The same after 0 was removed and stored again."""

LRU_CASES: list[tuple[str, Any, str, list[Action], str]] = []
for _profile, _lru in (("lru-0.34", LRU034CachePolicy), ("lru-0.33", LRU033CachePolicy)):
    LRU_CASES += [
        (f"{_profile}: evict ranks by the past", _ranks_by_past(_lru, "Past"), _profile,
         _LRU_REFRESH, "LRU033-EVICT-ORDER"),
        (f"{_profile}: the same after a remove", _ranks_by_past(_lru, "Past"), _profile,
         _LRU_REINSERTED, "LRU033-EVICT-ORDER"),
        (f"{_profile}: a finish that commits nothing", _finish_commits_nothing(_lru, "F"),
         _profile, _LRU_REFRESH, "LRU033-FINISH-COMMIT"),
    ]


@pytest.mark.parametrize(
    ("policy", "profile_name", "trace", "expected"),
    [case[1:] for case in LRU_CASES], ids=[case[0] for case in LRU_CASES],
)
@pytest.mark.parametrize("capacity", [4, 64])
def test_an_evict_that_reads_past_ranks_is_told_from_a_refresh(
    policy: type, profile_name: str, trace: list[Action], expected: str, capacity: int,
) -> None:
    placed = _placed(policy, profile_name, capacity, trace)
    assert placed.requirement == expected, placed
    assert bool(placed.note) == (expected == "LRU033-EVICT-ORDER")


# Only the difference between two routes that rank one request's positions
# (insert, access) shows: an access that counts one position off and an
# insert that does are told apart by no probe, so either is the order
# requirement's, with the reason; an insert wrong among inserts stays its own.


def _access_off_by_one(base: Any, name: str) -> type:
    def on_request_access(self: Any, keys: Any, req_context: Any) -> None:
        request = self.request_rank(req_context)
        for key in keys:
            position = req_context.get_offload_key_position(key)
            if position is None or key not in self.chunks:
                continue
            rank = (request, -position - 1)
            if self.ranks[key] < rank:
                self._rerank(key, rank)

    return type(name, (base,), {"on_request_access": on_request_access})


def _insert_ranks(base: Any, name: str, rank_of: Any) -> type:
    def insert(self: Any, key: Any, chunk: Any, req_context: Any) -> None:
        position = req_context.get_offload_key_position(key)
        rank = (self._tick(), 0) if position is None else rank_of(self, req_context, position)
        self.chunks[key] = chunk
        self._rerank(key, rank)
        if chunk.ref_cnt == 0:
            self.mark_evictable(key)

    return type(name, (base,), {"insert": insert})


_ACCESS_THEN_STORE = [
    ("insert", 10, -1, 2), ("finish_store", 10), ("insert", 3, -1, 3), ("finish_store", 3),
    ("set_positions", 5, ((10, 2), (0, 3))), ("on_request_access", 5, (10, 0)),
    ("evict", 1, NONE), ("insert", 0, -1, 5), ("finish_store", 0), ("evict", 1, NONE)]
_STORE_AFTER_ACCESS = [
    ("insert", 0, -1, 1), ("finish_store", 0), ("set_positions", 2, ((1, 0), (0, 1))),
    ("on_request_access", 2, (1, 0)), ("insert", 1, -1, 2), ("finish_store", 1),
    ("evict", 1, NONE)]
_STORED_TOGETHER = [("set_positions", 2, ((0, 0), (1, 1))), ("insert", 0, 0, 2),
                    ("insert", 1, 0, 2), ("evict", 1, NONE)]

POSITION_CASES: list[tuple[str, Any, list[Action], str]] = []
for _lru in (LRU034CachePolicy, LRU033CachePolicy):
    POSITION_CASES += [
        (f"{_lru.__name__}: an access one position off", _access_off_by_one(_lru, "A"),
         _ACCESS_THEN_STORE, "LRU033-EVICT-ORDER"),
        (f"{_lru.__name__}: an insert one position off",
         _insert_ranks(_lru, "I", lambda s, c, p: (s.request_rank(c), -p - 1)),
         _STORE_AFTER_ACCESS, "LRU033-EVICT-ORDER"),
        (f"{_lru.__name__}: an insert that counts positions upwards",
         _insert_ranks(_lru, "U", lambda s, c, p: (s.request_rank(c), p)),
         _STORED_TOGETHER, "LRU033-INSERT-RANK"),
    ]


@pytest.mark.parametrize(
    ("policy", "trace", "expected"),
    [case[1:] for case in POSITION_CASES], ids=[case[0] for case in POSITION_CASES],
)
def test_two_routes_that_rank_positions_apart_are_the_order(
    policy: type, trace: list[Action], expected: str,
) -> None:
    profile_name = "lru-0.34" if policy.__mro__[1] is LRU034CachePolicy else "lru-0.33"
    placed = _placed(policy, profile_name, 8, trace)
    assert placed.requirement == expected, placed
    assert bool(placed.note) == (expected == "LRU033-EVICT-ORDER")


# The one case the second look cannot settle: an ARC whose ghost hits never
# move the target. Ghosts show only through the adaptation, so a policy
# that keeps no ghost at all answers every sequence of calls as one whose
# hook ignores them (bugs G3, V7): the adaptation stays named, and the note
# names both (spec/arc.md, Attribution).


ARC034KeepsNoGhost = _keeps_no_ghost(ARC034CachePolicy, "ARC034KeepsNoGhost")


class ARC034IgnoresGhosts(ARC034CachePolicy[Any, Any]):
    def on_store_miss(self, keys: Any, req_context: Any) -> None:
        return None


class _Context:
    """The least of a request context these calls read: no positions."""

    def get_offload_key_position(self, key: Any) -> None:
        return None

    def get_state(self, kind: Any) -> None:
        return None

    def set_state(self, state: Any) -> None:
        return None


class _Chunk:
    ref_cnt = 0


@pytest.mark.parametrize("seed", range(20))
def test_an_arc_that_keeps_no_ghost_answers_as_one_that_ignores_them(seed: int) -> None:
    import random

    rng = random.Random(seed)
    capacity = rng.choice([2, 4, 8])
    policies = [ARC034KeepsNoGhost(capacity), ARC034IgnoresGhosts(capacity)]
    context, held = _Context(), set[int]()
    for _ in range(300):
        roll, key = rng.random(), rng.randrange(3 * capacity)
        if roll < 0.4 and key not in held and len(held) < capacity:
            for policy in policies:
                policy.on_store_miss([key], context)
                policy.insert(key, _Chunk(), context)
            held.add(key)
        elif roll < 0.6 and held:
            reused = rng.sample(sorted(held), rng.randint(1, len(held)))
            for policy in policies:
                policy.on_request_finished([reused], set(), set(reused), context)
        elif roll < 0.7 and key in held:
            for policy in policies:
                policy.remove(key)
            held.discard(key)
        else:
            n = rng.randint(0, len(held))
            got = [policy.evict(n, set()) for policy in policies]
            assert [[k for k, _ in g] if g else g for g in got] == [
                [k for k, _ in got[0]] if got[0] else got[0]] * 2
            held -= {k for k, _ in got[0] or ()}
