"""The core judge: history records in, violations out, in place and in
constant memory, so that a production history of any length can be judged.

It re-implements for core (and the seed LRU's idle order) what
``ProfileModel.step`` decides, rebuilding the manager's ``ref_cnt`` writes
from the protocol (spec/history.md); tests/test_one_semantics.py holds it
to the model. After a violation it follows the manager, never the policy,
so it names every later violation too.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from policyspec.history import format as fmt
from policyspec.profiles import Profile

__all__ = ["CoreJudge", "Violation"]

CALLER = "caller"
POLICY = "policy"


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule at one call of a history."""

    call: int
    """The call's number (0 for a history's first call)."""
    requirement: str
    """A requirement id (category ``policy``) or the caller-contract
    predicate the call breaks (category ``caller``: ``can_insert``, ...)."""
    kind: str
    """``policy``: the policy broke the spec; ``caller``: the manager broke
    the caller contract (a bug of the manager, or of the spec)."""
    profile: str
    """The profile whose model the judgment comes from (``core``, ``lru``)."""
    message: str
    key: int | None = None
    """The key the judgment is about, when there is one (to find the
    window of the history that shows it)."""
    since: int | None = None
    """The call from which the history shows it, when the judge knows
    (the evict that returned a key a policy still holds, ...)."""
    culprit: str | None = None
    """For a wrong eviction order: the requirement of the call that most
    likely put it wrong, read from the history alone (``_culprit``)."""


Sink = Callable[[Violation], None]

_TOTAL = {fmt.TOUCH: "TOUCH-TOTAL", fmt.STORE_MISS: "HOOK-TOTAL", fmt.ACCESS: "HOOK-TOTAL",
          fmt.FINISH: "HOOK-TOTAL"}
"""Calls whose contract has its own "accepts every call" requirement."""

_GONE_LIMIT = 1 << 16
"""Absent keys remembered with the call that made them absent (to name an
evict or a remove a policy did not carry out)."""


class _Request:
    """What the caller contract knows of one request in this generation."""

    __slots__ = ("missed", "seen")

    def __init__(self) -> None:
        self.seen: set[int] = set()
        self.missed: set[int] = set()


class CoreJudge:
    """The core (and, with ``ordered``, an in-place exact) model of one policy,
    judged record by record (spec/history.md). ``sink`` receives every
    violation; by default the judge keeps the first of each id (``first``)
    and counts all (``counts``)."""

    def __init__(
        self,
        capacity: int | None,
        *,
        ordered: Profile | None = None,
        first_call: int = 0,
        generation: int = 0,
        state: dict[str, Any] | None = None,
        sink: Sink | None = None,
    ) -> None:
        self.capacity = capacity
        self.ordered = ordered is not None
        self.ordered_as = ordered.name if ordered is not None else ""
        """The exact profile judged in place (``in_place``), or ""."""
        refinement = ordered.refinement if ordered is not None else None
        self.ids: dict[str, str] = {} if refinement is None else {
            "order": refinement.order_requirement,
            "liveness": refinement.liveness_requirement,
            **{op: refinement.culprit(op) for op in ("touch", "mark_evictable", "insert")},
        }
        """Its requirement ids: of its order, its liveness and each call that
        places an idle key."""
        self.call = first_call - 1
        """The number of the last call judged."""
        self.generation = generation
        self.refs: dict[int, int] = {}
        self.cids: dict[int, int] = {}
        self.idle: dict[int, int | None] = OrderedDict() if self.ordered else {}
        """Idle keys (least recent first, with ``ordered``), each with the code
        of the call that last placed it (to name the culprit of a wrong order)."""
        self.requests: dict[int, _Request] = {}
        self.finished = bytearray()
        """One bit per request id: finished in this generation."""
        self.gone: OrderedDict[int, tuple[str, int, int]] = OrderedDict()
        """Recently absent keys: (op that removed it, its call, chunk id),
        oldest first (an ``OrderedDict``: dropping a plain dict's first
        entry scans the holes its earlier deletions left)."""
        self.cleared: tuple[int, dict[int, int]] = (-1, {})
        """The last clear's call and the chunk ids present before it."""
        self.first: dict[str, Violation] = {}
        self.counts: Counter[str] = Counter()
        self.seen = Counter[str]()
        """What the history let the judge observe (``exercised``)."""
        self.listed = 0
        """Evictions that returned a list (each exercises four ids)."""
        self.shut_idle = 0
        """Such evictions with a protected key idle (EVICT-UNPROTECTED)."""
        self.in_flight = 0
        """Such evictions with a key in flight or being read
        (INSERT-IN-FLIGHT-NOT-ELIGIBLE). Plain counts, not ``seen``'s:
        an eviction is the judge's costliest common record."""
        self.lru_failed = False
        self.sink: Sink = sink or self._keep
        if state:
            self.restore(state)

    # -- state ---------------------------------------------------------------

    def restore(self, state: dict[str, Any]) -> None:
        """Start from a segment header's ``state`` (spec/history.md)."""
        keys = state.get("keys", [])
        for i in range(0, len(keys), 3):
            self.refs[keys[i]] = keys[i + 2]
            self.cids[keys[i]] = keys[i + 1]
        for k in state.get("idle", []):
            self.idle[k] = None

    def snapshot(self) -> dict[str, Any]:
        """The state as a segment header writes it: present keys as flat
        (key, chunk id, ref_cnt) triples, idle keys in their order."""
        flat: list[int] = []
        cids = self.cids
        for k, ref in self.refs.items():
            flat += (k, cids[k], ref)
        return {"keys": flat, "idle": list(self.idle)}

    def exercised(self) -> dict[str, int]:
        """The ids the history let the judge observe, with their counts."""
        found = dict(self.seen)
        if self.listed:
            for rid in ("EVICT-SHAPE", "EVICT-EXACT-N", "EVICT-IDLE-ONLY", "EVICT-IDENTITY"):
                found[rid] = found.get(rid, 0) + self.listed
        for rid, count in (("EVICT-UNPROTECTED", self.shut_idle),
                           ("INSERT-IN-FLIGHT-NOT-ELIGIBLE", self.in_flight)):
            found[rid] = found.get(rid, 0) + count
        return {rid: count for rid, count in found.items() if count > 0}

    # -- violations ----------------------------------------------------------

    def _keep(self, violation: Violation) -> None:
        self.counts[violation.requirement] += 1
        if violation.requirement not in self.first:
            self.first[violation.requirement] = violation

    def _policy(self, rid: str, message: str, key: int | None = None,
                since: int | None = None, profile: str = "core",
                culprit: str | None = None) -> None:
        self.sink(Violation(self.call, rid, POLICY, profile, message, key, since, culprit))

    def _caller(self, predicate: str, message: str, key: int | None = None) -> None:
        self.sink(Violation(self.call, predicate, CALLER, "core", message, key))

    # -- the stream ------------------------------------------------------------

    def feed(self, records: Iterable[Sequence[Any]]) -> None:
        """Judge records in order (spec/history.md). The hot loop: the common
        case of get, insert, mark_* and (without ``ordered``) touch is
        judged inline; anything else, and every violation, by the
        method of its operation."""
        refs = self.refs
        refs_get = refs.get
        cids = self.cids
        idle = self.idle
        ordered = self.ordered
        capacity = self.capacity if self.capacity is not None else 1 << 62
        gone = self.gone
        requests_get = self.requests.get
        handlers = _HANDLERS
        markers = _MARKER_CODES
        marked = 0
        call = self.call
        generation = self.generation
        try:
            for rec in records:
                op = rec[0]
                if op == 0:  # get
                    call += 1
                    ref = refs_get(rec[1])
                    if len(rec) == 2:
                        if ref is None:
                            continue  # absent, and get says so
                    elif ref is not None and cids[rec[1]] == rec[2] and (
                            rec[3] == ref or (rec[3] > 0 and ref > 0)):
                        continue  # its own chunk, read as the manager's writes leave it
                    self.call = call
                    self._get(rec)
                    continue
                call += 1
                if op == 6:  # mark_evictable
                    k = rec[1]
                    if k in refs and k not in idle and (len(rec) < 3 or rec[2] == 0):
                        refs[k] = 0
                        idle[k] = 6
                        marked += 1
                        continue
                elif op == 1:  # insert, in flight, by the manager
                    k = rec[1]
                    if (rec[3] == -1 and len(rec) == 6 and k not in refs
                            and len(refs) < capacity and rec[5] == generation):
                        refs[k] = -1
                        cids[k] = rec[2]
                        if k in gone:
                            del gone[k]
                        continue
                elif op == 7:  # mark_non_evictable
                    k = rec[1]
                    if k in idle and (len(rec) < 3 or rec[2] == 0):
                        del idle[k]
                        refs[k] = 1
                        continue
                elif op == 3 and not ordered:
                    continue  # a touch moves nothing core keeps
                elif op in markers:
                    call -= 1
                    continue
                elif (op == 9 or op == 8) and rec[2] == generation:
                    request = requests_get(rec[1])  # a request met before, not finished
                    keys = rec[3]
                    if request is not None and keys:
                        distinct = set(keys)
                        if len(distinct) == len(keys):
                            if op == 9:
                                if request.seen.isdisjoint(distinct):
                                    request.seen |= distinct
                                    continue
                            elif (request.missed.isdisjoint(distinct)
                                  and refs.keys().isdisjoint(distinct)):
                                request.missed |= distinct
                                continue
                self.call = call
                handlers[op](self, rec)
                generation = self.generation  # a clear, or a record naming another
        finally:
            self.call = call
            if marked and ordered:
                self.seen[self.ids["mark_evictable"]] += marked

    def feed_one(self, rec: Sequence[Any]) -> None:
        """Judge one record (the guard's check mode: without the set-up of
        ``feed``'s loop)."""
        op = rec[0]
        if op in _MARKER_CODES:
            return
        self.call += 1
        if op != 0:
            _HANDLERS[op](self, rec)
            return
        self._get(rec)

    # -- get -------------------------------------------------------------------

    def _get(self, rec: Sequence[Any]) -> None:
        k = rec[1]
        ref = self.refs.get(k)
        if len(rec) == 2:
            if ref is not None:
                self._lost(k)
        elif ref is None:
            self._found(k, rec[2])
        elif self.cids[k] != rec[2] or (rec[3] != ref and (rec[3] <= 0 or ref <= 0)):
            self._wrong_chunk(k, rec[2], rec[3], ref)

    def _lost(self, k: int) -> None:
        self._policy(
            "GET-ABSENT",
            f"get({k}) returned None; key {k} is present (inserted, not removed, evicted or "
            "cleared since) and the spec requires its chunk", key=k)
        self._drop(k)

    def _found(self, k: int, cid: int) -> None:
        gone = self.gone.get(k)
        if gone is not None and gone[2] == cid:
            op, at, _ = gone
            rid = "EVICT-REMOVES" if op == "evict" else "REMOVE-DROPS"
            self._policy(rid, f"get({k}) returned chunk {cid}, the chunk of key {k} that "
                         f"{op} at call {at} took out; the spec requires None", k, at)
            return
        at, before = self.cleared
        if before.get(k) == cid:
            self._policy("CLEAR-EMPTIES", f"get({k}) returned chunk {cid}, which key {k} held "
                         f"before clear() at call {at}; the spec requires None", k, at)
            return
        self._policy("GET-ABSENT", f"get({k}) returned chunk {cid}; key {k} is absent and "
                     "the spec requires None", k)

    def _wrong_chunk(self, k: int, cid: int, seen: int, ref: int) -> None:
        if self.cids[k] != cid:
            self._policy("GET-IDENTITY", f"get({k}) returned chunk {cid}; key {k} was "
                         f"inserted with chunk {self.cids[k]} and the spec requires that "
                         "very chunk", k)
            return
        self._policy("BLOCK-NO-WRITE", f"get({k}) returned its chunk reading ref_cnt={seen}; "
                     f"the manager's writes leave it at {_ref_text(ref)}, and the spec forbids "
                     "the policy to write ref_cnt", k)

    def _drop(self, k: int) -> None:
        self.refs.pop(k, None)
        self.cids.pop(k, None)
        self.idle.pop(k, None)

    # -- the other calls -------------------------------------------------------

    def _insert(self, rec: Sequence[Any]) -> None:
        k, cid, ref = rec[1], rec[2], rec[3]
        refs = self.refs
        if k in refs:
            self._caller("can_insert", f"insert({k}) of a present key; the manager never "
                         "inserts a key that get finds (C2, C11)", k)
            return
        capacity = self.capacity
        if capacity is not None and len(refs) >= capacity:
            self._caller("can_insert", f"insert({k}) with {len(refs)} chunks present, the "
                         f"capacity {capacity}: the manager evicts first (C1, C6)", k)
        if ref not in (-1, 0):
            self._caller("can_insert", f"insert({k}) of a chunk with ref_cnt={ref}; the "
                         "manager inserts fresh chunks (ref_cnt -1)", k)
        if len(rec) > 5 and rec[5] != self.generation:
            self._generation(rec[5])
        if len(rec) > 6:
            self._policy("BLOCK-NO-WRITE", f"insert({k}) left its chunk reading "
                         f"ref_cnt={rec[6]}; the manager passed it with {ref}, and the spec "
                         "forbids the policy to write ref_cnt", k)
        refs[k] = ref
        self.cids[k] = cid
        if ref == 0:
            self.idle[k] = fmt.INSERT
        self.gone.pop(k, None)

    def _remove(self, rec: Sequence[Any]) -> None:
        k = rec[1]
        if k not in self.refs:
            self._caller("can_remove", f"remove({k}) of an absent key; the manager removes "
                         "only keys whose store failed (C5)", k)
            return
        self._forget(k, "remove")

    def _forget(self, k: int, op: str) -> None:
        gone = self.gone
        gone.pop(k, None)  # re-entered at the end: the oldest go first
        gone[k] = (op, self.call, self.cids.pop(k))
        if len(gone) > _GONE_LIMIT:
            gone.popitem(last=False)
        del self.refs[k]
        self.idle.pop(k, None)

    def _touch(self, rec: Sequence[Any]) -> None:
        if not self.ordered:
            return
        idle = self.idle
        moved = False
        for k in reversed(rec[1]):
            if k in idle:
                idle.move_to_end(k)  # type: ignore[attr-defined]
                idle[k] = fmt.TOUCH
                moved = True
        if moved:
            self.seen[self.ids["touch"]] += 1

    def _clear(self, rec: Sequence[Any]) -> None:
        self.cleared = (self.call, self.cids.copy())
        self.refs.clear()
        self.cids.clear()
        self.idle.clear()
        self.gone.clear()
        self.requests.clear()
        self.finished = bytearray()
        self.generation += 1

    def _mark_evictable(self, rec: Sequence[Any]) -> None:
        k = rec[1]
        ref = self.refs.get(k)
        if ref is None or k in self.idle:
            why = "an absent key" if ref is None else "a key already idle"
            self._caller("can_mark_evictable", f"mark_evictable({k}) of {why}; the manager "
                         "calls it once on each transition of ref_cnt to 0 (C3)", k)
            return
        self.refs[k] = 0
        self.idle[k] = fmt.MARK_EVICTABLE
        if len(rec) > 2 and rec[2] != 0:
            self._wrote(k, rec[2], "mark_evictable")
        if self.ordered:
            self.seen[self.ids["mark_evictable"]] += 1

    def _mark_non_evictable(self, rec: Sequence[Any]) -> None:
        k = rec[1]
        if k not in self.idle:
            why = "an absent key" if k not in self.refs else f"a key {_ref_text(self.refs[k])}"
            self._caller("can_mark_non_evictable", f"mark_non_evictable({k}) of {why}; the "
                         "manager pins only idle keys, before ref_cnt 0 -> 1 (C4)", k)
            return
        del self.idle[k]
        self.refs[k] = 1
        if len(rec) > 2 and rec[2] != 0:
            self._wrote(k, rec[2], "mark_non_evictable")

    def _wrote(self, k: int, seen: int, op: str) -> None:
        self._policy("BLOCK-NO-WRITE", f"{op}({k}) left its chunk reading ref_cnt={seen}; "
                     "the manager writes ref_cnt around this call (0 at it), and the spec "
                     "forbids the policy to write it", k)

    def _evict(self, rec: Sequence[Any]) -> None:
        n, protected = rec[1], rec[2]
        idle = self.idle
        if n < 0:
            self._caller("can_evict", f"evict({n}) asks for a negative number of keys")
            return
        seen = self.seen
        shut = set(protected)
        if len(rec) == 3:  # None
            seen["EVICT-SHAPE"] += 1
            eligible = len(idle) - sum(1 for k in shut if k in idle)
            if n == 0:
                self._policy("EVICT-ZERO", "evict(0) returned None; the spec requires []")
            elif eligible >= n:
                seen["EVICT-LIVENESS"] += 1
                self._policy("EVICT-LIVENESS", f"evict({n}, {_keys(protected)}) returned None "
                             f"while {_eligible(eligible)}; the spec asks for {n}")
                if self.ordered and not self.lru_failed:
                    seen[self.ids["liveness"]] += 1
                    self.lru_failed = True
                    self._policy(self.ids["liveness"], f"evict({n}, {_keys(protected)}) "
                                 f"returned None while {_eligible(eligible)}; the "
                                 f"{self.ordered_as} profile evicts {n} of them",
                                 profile=self.ordered_as)
            elif self.ordered:
                seen[self.ids["order"]] += 1
            return
        result = rec[3]
        if result.__class__ is str:
            seen["EVICT-SHAPE"] += 1
            self._policy("EVICT-SHAPE", f"evict({n}, {_keys(protected)}) returned {result}; "
                         "the spec requires None or a list of (key, chunk) pairs")
            return
        victims = result[0::3]
        chosen = set(victims)
        self.listed += 1  # EVICT-SHAPE, -EXACT-N, -IDLE-ONLY, -IDENTITY (``exercised``)
        if shut and not idle.keys().isdisjoint(shut):
            self.shut_idle += 1
        refs, cids = self.refs, self.cids
        if len(idle) < len(refs):
            self.in_flight += 1
        if n == 0 and victims:
            self._policy("EVICT-ZERO", f"evict(0) returned {_keys(victims)}; the spec "
                         "requires []")
        elif len(victims) != n or len(chosen) != n:
            self._policy("EVICT-EXACT-N", f"evict({n}, {_keys(protected)}) returned "
                         f"{_keys(victims)}; the spec requires exactly {n} distinct keys")
        elif not (
            (not shut or shut.isdisjoint(chosen))
            and idle.keys() >= chosen
            and list(map(cids.__getitem__, victims)) == result[1::3]
            and not any(result[2::3])
        ):  # the common case above is judged at C speed; this names what is wrong
            self._check_victims(n, protected, shut, result)
        if self.ordered and not self.lru_failed:
            self._lru_order(n, shut, victims)
        gone, call = self.gone, self.call
        for k in victims:
            if k in refs:
                if k in gone:
                    del gone[k]  # re-entered at the end: the oldest go first
                gone[k] = ("evict", call, cids.pop(k))
                del refs[k]
                idle.pop(k, None)
        while len(gone) > _GONE_LIMIT:
            gone.popitem(last=False)

    def _check_victims(
        self, n: int, protected: Sequence[int], shut: set[int], result: Sequence[int]
    ) -> None:
        idle, cids = self.idle, self.cids
        call = f"evict({n}, {_keys(protected)})"
        for i in range(0, len(result), 3):
            k, cid, ref = result[i], result[i + 1], result[i + 2]
            if k in shut:
                self._policy("EVICT-UNPROTECTED", f"{call} returned key {k}, which is "
                             "protected", k)
                return
            if k not in idle:
                state = "absent" if k not in self.refs else _ref_text(self.refs[k])
                self._policy("EVICT-IDLE-ONLY", f"{call} returned key {k}, {state}; only "
                             f"idle keys may be evicted ({len(idle)} were)", k)
                return
            if cids[k] != cid:
                self._policy("EVICT-IDENTITY", f"{call} returned for key {k} chunk {cid}, not "
                             f"the chunk inserted ({cids[k]}); the spec requires that very "
                             "chunk", k)
                return
            if ref != 0:
                self._policy("BLOCK-NO-WRITE", f"{call} returned key {k}, idle, with its chunk "
                             f"reading ref_cnt={ref}; the manager wrote 0", k)
                return

    def _lru_order(self, n: int, shut: set[int], victims: list[int]) -> None:
        """The seed LRU's victims: the first n idle keys not protected."""
        expected: list[int] = []
        if n:
            for k in self.idle:
                if k not in shut:
                    expected.append(k)
                    if len(expected) == n:
                        break
        self.seen[self.ids["order"]] += 1
        if len(expected) < n:
            return  # core already judged: the liveness id only when it returns None
        self.seen[self.ids["liveness"]] += 1
        if expected != victims:
            self.lru_failed = True
            culprit, why = self._culprit(expected, victims)
            self._policy(self.ids["order"], f"evict({n}, {_keys(sorted(shut))}) returned "
                         f"{_keys(victims)}; the {self.ordered_as} profile requires "
                         f"{_keys(expected)}{why}", victims[0] if victims else None,
                         profile=self.ordered_as, culprit=culprit)

    def _culprit(self, expected: list[int], victims: list[int]) -> tuple[str | None, str]:
        """The requirement a wrong LRU order most likely comes from, read
        from the history alone: the call that last placed the first victim
        the policy took out of turn (it should have been more recent than
        the key the model evicts instead). Without the policy to probe this
        is a reading, not a proof; the message says so."""
        for e, v in zip(expected, victims, strict=False):
            if e != v:
                placed = self.idle.get(v, -1)
                op = _PLACED.get(placed if placed is not None else -1)
                if op is None:
                    break
                rid = self.ids[op]
                return rid, (f"; key {v} was last placed by {fmt.op_name(placed or 0)}: "
                             f"likely {rid} (a reading of the history, not a proof)")
        return None, ""

    # -- the request level -----------------------------------------------------

    def _generation(self, found: int) -> None:
        self._caller("generation", f"the record names cache generation {found}, the history's "
                     f"clears make it {self.generation}: a clear() is missing from the history")
        self.generation = found

    def _request(self, rec: Sequence[Any]) -> _Request | None:
        """The caller contract's record of the request of a hook record,
        or None (and a caller violation) when it finished already."""
        r, generation = rec[1], rec[2]
        if generation != self.generation:
            self._generation(generation)
        byte = r >> 3
        if byte < len(self.finished) and self.finished[byte] >> (r & 7) & 1:
            self._caller("can_finish" if rec[0] == fmt.FINISH else
                         ("can_store_miss" if rec[0] == fmt.STORE_MISS else "can_access"),
                         f"{fmt.op_name(rec[0])} of request {r}, which finished already "
                         "(the manager finishes a request once per generation)")
            return None
        request = self.requests.get(r)
        if request is None:
            request = self.requests[r] = _Request()
        return request

    def _store_miss(self, rec: Sequence[Any]) -> None:
        request = self._request(rec)
        if request is None:
            return
        keys = rec[3]
        distinct = set(keys)
        missed = request.missed
        if (
            not keys or len(distinct) != len(keys)
            or not self.refs.keys().isdisjoint(distinct) or not missed.isdisjoint(distinct)
        ):
            self._caller("can_store_miss", f"on_store_miss({_keys(keys)}) of request "
                         f"{rec[1]}: the manager reports distinct absent keys, each once per "
                         "request")
        missed |= distinct

    def _access(self, rec: Sequence[Any]) -> None:
        request = self._request(rec)
        if request is None:
            return
        keys = rec[3]
        seen = request.seen
        distinct = set(keys)
        if not keys or len(distinct) != len(keys) or not seen.isdisjoint(distinct):
            self._caller("can_access", f"on_request_access({_keys(keys)}) of request {rec[1]}: "
                         "the manager reports each key once per request, and only new ones")
        seen |= distinct

    def _finish(self, rec: Sequence[Any]) -> None:
        if self._request(rec) is None:
            return
        r = rec[1]
        self.requests.pop(r, None)
        byte = r >> 3
        finished = self.finished
        if byte >= len(finished):
            finished.extend(bytes(byte - len(finished) + 1))
        finished[byte] |= 1 << (r & 7)

    def _raised(self, rec: Sequence[Any]) -> None:
        name, inner = rec[1], rec[2]
        op = inner[0]
        if not self._legal(inner):
            return  # a caller breach: the policy owes nothing
        self._policy(_TOTAL.get(op, "API-NO-RAISE"),
                     f"{fmt.op_name(op)}{_args(inner)} raised {name}; the call meets the "
                     "caller contract, so the spec requires it to return normally",
                     inner[1] if op in _KEYED else None)

    def _legal(self, inner: Sequence[Any]) -> bool:
        """Whether a call that raised met the caller contract (a breach is
        reported here; the state is left as it was)."""
        op = inner[0]
        k = inner[1] if op in _KEYED else None
        refs, idle = self.refs, self.idle
        broken = None
        if op == fmt.INSERT and (k in refs or inner[3] not in (-1, 0)):
            broken = "can_insert"
        elif op == fmt.REMOVE and k not in refs:
            broken = "can_remove"
        elif op == fmt.MARK_EVICTABLE and (k not in refs or k in idle):
            broken = "can_mark_evictable"
        elif op == fmt.MARK_NON_EVICTABLE and k not in idle:
            broken = "can_mark_non_evictable"
        elif op == fmt.EVICT and inner[1] < 0:
            broken = "can_evict"
        if broken is None:
            return True
        self._caller(broken, f"{fmt.op_name(op)}{_args(inner)} outside the caller contract "
                     "(and it raised)", k)
        return False


_PLACED = {fmt.TOUCH: "touch", fmt.MARK_EVICTABLE: "mark_evictable", fmt.INSERT: "insert"}
"""The call that last placed an idle key, by its record's code: the exact
profile's requirement for it is the refinement's ``culprit``."""

_KEYED = frozenset({fmt.GET, fmt.INSERT, fmt.REMOVE, fmt.MARK_EVICTABLE, fmt.MARK_NON_EVICTABLE})
_MARKER_CODES = frozenset(fmt.MARKERS)

_HANDLERS: dict[int, Callable[[CoreJudge, Sequence[Any]], None]] = {
    fmt.INSERT: CoreJudge._insert,
    fmt.REMOVE: CoreJudge._remove,
    fmt.TOUCH: CoreJudge._touch,
    fmt.EVICT: CoreJudge._evict,
    fmt.CLEAR: CoreJudge._clear,
    fmt.MARK_EVICTABLE: CoreJudge._mark_evictable,
    fmt.MARK_NON_EVICTABLE: CoreJudge._mark_non_evictable,
    fmt.STORE_MISS: CoreJudge._store_miss,
    fmt.ACCESS: CoreJudge._access,
    fmt.FINISH: CoreJudge._finish,
    fmt.RAISED: CoreJudge._raised,
}


def _ref_text(ref: int) -> str:
    if ref < 0:
        return "in flight (ref_cnt -1)"
    return "idle (ref_cnt 0)" if ref == 0 else "being read (ref_cnt > 0)"


def _keys(keys: Iterable[int]) -> str:
    return "[" + ", ".join(str(k) for k in keys) + "]"


def _args(rec: Sequence[Any]) -> str:
    return "(" + ", ".join(str(a) for a in rec[1:]) + ")"


def _eligible(count: int) -> str:
    return "1 key was eligible" if count == 1 else f"{count} keys were eligible"

