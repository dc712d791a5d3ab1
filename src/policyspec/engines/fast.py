"""The fast engine: many caller-legal actions per second, checked cheaply.

Hypothesis's stateful engine runs about ten thousand steps a second; a
policy answers millions of calls. This engine spends its time on the policy
instead: ``ActionSource`` draws legal actions straight from the oracle's
state, ``_Driver`` makes the manager's calls on the policy and moves a
``FastOracle`` in lockstep, and each call gets checks that are cheap but
real: the exact victims (lru) or allowed victims (core) of every eviction,
identity of every returned block, presence through ``get`` of every key an
action named, the ref_cnt and block_id of the blocks involved, and a sweep of
every present key every 128 actions.

The engine only detects. On a failure the full ``Lockstep`` harness replays
the trace and is the judge: it names the requirement, and the shrinker
(``engines/shrink.py``) minimises the trace with it, so findings read like
those of every other engine. A failure the harness does not reproduce is an
engine error, never a verdict.

Profiles are data: no refinement means the loose (core) check; the
``LRURefinement`` gets the fast exact check; any other refinement (arc, ...)
runs the full ``Lockstep`` with the model and the refinement's hooks (slower,
still without Hypothesis).
"""

from __future__ import annotations

import random
from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterable, Sequence
from itertools import islice
from operator import attrgetter, is_not, itemgetter, ne
from time import monotonic
from typing import Any

from policyspec.engines.generate import ActionSource
from policyspec.engines.oracle import FastOracle
from policyspec.engines.replay import fails_with, failure_of
from policyspec.engines.result import EngineRun, Finding
from policyspec.engines.shrink import shrink
from policyspec.harness import ConformanceFailure, Lockstep
from policyspec.harness.watchdog import CallTimeout
from policyspec.harness.watchdog import current as watch
from policyspec.model.actions import Action
from policyspec.model.state import IDLE
from policyspec.profiles import LRURefinement, Profile
from policyspec.registry import load_registry
from policyspec.subject import Subject

__all__ = ["EXAMPLE_STEPS", "SWEEP_EVERY", "run_fast"]

ENGINE = "fast"
EXAMPLE_STEPS = 500
"""Actions per example (from a fresh policy): long enough to fill the cache
and run it under pressure, short enough to shrink quickly."""
SWEEP_EVERY = 128
"""Every this many actions, every present key is checked (get, block)."""


class _Found(Exception):
    """The driver saw a difference; the harness will judge it."""

    def __init__(self, requirement: str, message: str) -> None:
        super().__init__(f"{requirement}: {message}")
        self.requirement = requirement
        self.message = message


def run_fast(
    subject: Subject,
    profile: Profile,
    seconds: float,
    seed: int,
    capacity: int,
    *,
    steps: int = EXAMPLE_STEPS,
    examples: int | None = None,
) -> EngineRun:
    """Check ``subject`` under ``profile`` for about ``seconds`` (or for
    ``examples`` examples of ``steps`` actions, when given: benchmarks and
    tests use that). The same seed gives the same actions in the same order."""
    run = EngineRun(engine=ENGINE)
    started = monotonic()
    rng = random.Random(seed)
    pool = max(4, capacity + capacity // 2)
    source = ActionSource(rng, pool=pool, capacity=capacity, with_clear=subject.has("clear"))
    refinement = profile.refinement
    if refinement is None or isinstance(refinement, LRURefinement):
        _run_driver(run, subject, profile, capacity, source, started + seconds, steps, examples)
    else:
        run.notes.append(
            f"no fast oracle for the {profile.name} refinement: every action runs through the "
            "model and the refinement's hooks (slower)"
        )
        _run_lockstep(run, subject, profile, capacity, source, started + seconds, steps,
                      examples)
    run.seconds = monotonic() - started
    return run


# -- the fast path ---------------------------------------------------------------


def _run_driver(
    run: EngineRun,
    subject: Subject,
    profile: Profile,
    capacity: int,
    source: ActionSource,
    deadline: float,
    steps: int,
    examples: int | None,
) -> None:
    exact = profile.refinement is not None
    keys = [subject.make_key(k) for k in range(source.pool + 4)]
    model_of = {key: k for k, key in enumerate(keys)}
    must = {rid for rid, req in load_registry().items() if req.level == "MUST"}
    sizes = idles = samples = 0
    kinds: Counter[str] = Counter()
    soft: dict[str, tuple[Action, ...]] = {}
    burst = source.burst
    while (run.examples < examples) if examples is not None else (monotonic() < deadline):
        driver = _Driver(subject, capacity, keys, model_of, exact)
        handlers, oracle = driver.handlers, driver.oracle
        trace: list[Action] = []
        extend = trace.extend
        watch.op = ENGINE
        try:
            while len(trace) < steps:
                # The watchdog's clock restarts every chunk, not every call:
                # a chunk of fast calls is far below any call time limit.
                watch.since = monotonic()
                chunk_end = min(steps, len(trace) + SWEEP_EVERY)
                while len(trace) < chunk_end:
                    actions = burst(oracle)
                    extend(actions)
                    try:
                        handlers[actions[0][0]](actions)
                    except _Found as found:
                        if found.requirement in must:
                            raise
                        soft.setdefault(found.requirement, tuple(trace))
                driver.sweep()
                sizes += len(oracle.refs)
                idles += len(oracle.idle)
                samples += 1
        except _Found as found:
            _judge(run, subject, profile, capacity, trace, found)
        except CallTimeout:
            message = f"a policy call in {trace[-1]!r} did not return within the time limit"
            run.add(Finding("API-RETURNS", message, tuple(trace), ENGINE))
        except Exception as exc:  # the policy raised during a legal call
            raised = _Found("API-NO-RAISE", f"{trace[-1]!r} raised {type(exc).__name__}: {exc}")
            _judge(run, subject, profile, capacity, trace, raised)
        finally:
            watch.op = None
        run.calls += driver.calls
        run.steps += len(trace)
        run.examples += 1
        kinds.update(map(_KIND, trace))
        _count_checks(run, driver, kinds, exact, profile)
        kinds.clear()
        if run.findings or run.error:
            break
    for requirement, trace_ in soft.items():
        _judge(run, subject, profile, capacity, list(trace_), _Found(requirement, "soft"))
    if samples:
        run.counts["mean_keys"] = round(sizes / samples)
        run.counts["mean_idle"] = round(idles / samples)
        run.notes.append(
            f"states reached: {sizes / samples:.0f} keys and {idles / samples:.0f} idle on "
            f"average (capacity {capacity})"
        )


_KIND = itemgetter(0)
_SECOND = itemgetter(1)
_THIRD = itemgetter(2)
_REF_CNT = attrgetter("ref_cnt")
_BLOCK_ID = attrgetter("block_id")
_sink: deque[object] = deque(maxlen=0)
_consume: Callable[[Iterable[object]], None] = _sink.extend
"""Runs an iterator to its end in C (each item a policy call made in order)."""


class _Driver:
    """One policy and its oracle, driven action by action. Each handler makes
    the manager's calls for one action (``model.actions.expand``), moves the
    oracle, and raises ``_Found`` at the first difference. Written for speed:
    C-level ``map`` where a loop would only move data, and trivial oracle
    writes (one dict entry) inline; the oracle's logic stays in FastOracle."""

    def __init__(
        self,
        subject: Subject,
        capacity: int,
        keys: Sequence[Hashable],
        model_of: dict[Hashable, int],
        exact: bool,
    ) -> None:
        self.policy = subject.build(capacity)
        self.make_block = subject.make_block
        self.has_mark = subject.has("mark")
        self.exact = exact
        self.keys = keys
        self.real = keys.__getitem__
        self.model_of = model_of
        self.oracle = FastOracle(capacity)
        self.blocks: dict[int, Any] = {}
        self.ids: dict[int, int] = {}
        self.next_id = 0
        self.calls = 0
        self.evicted = self.refused = self.zero = 0
        self.handlers: dict[str, Callable[[list[Action]], None]] = {
            "insert": self.insert,
            "finish_store": self.finish_store,
            "remove": self.remove,
            "start_read": self.start_read,
            "end_read": self.end_read,
            "touch": self.touch,
            "evict": self.evict,
            "get": self.get,
            "clear": self.clear,
        }

    # -- checks -------------------------------------------------------------------

    def _presence(self, k: int, got: object, requirement: str) -> None:
        """``got`` (from get) is wrong for key ``k``: name the requirement as
        the harness does."""
        block = self.blocks.get(k)
        if block is not None and got is not None:
            raise _Found("GET-IDENTITY", f"get({k}) returned another object than the block")
        state = "present" if block is not None else "absent"
        raise _Found(requirement, f"get({k}) returned {got!r} although key {k} is {state}")

    def _observe(self, named: Sequence[int], requirement: str | None) -> None:
        """get of every key in ``named`` answers as the oracle says (C-level
        loops; the slow path only names the culprit). A None requirement
        means GET-IDENTITY or GET-ABSENT, by the key's presence."""
        blocks = self.blocks
        self.calls += len(named)
        if any(map(is_not, map(self.policy.get, map(self.real, named)), map(blocks.get, named))):
            get, keys = self.policy.get, self.keys
            for k in named:
                got = get(keys[k])
                if got is not blocks.get(k):
                    rid = requirement or ("GET-IDENTITY" if k in blocks else "GET-ABSENT")
                    self._presence(k, got, rid)

    def _observe_blocks(self, named: Sequence[int], requirement: str) -> None:
        """``_observe``, and the ref_cnt of the blocks of ``named`` (present
        keys) is what the manager wrote (block ids: every sweep)."""
        self._observe(named, requirement)
        if any(map(ne, map(_REF_CNT, map(self.blocks.__getitem__, named)),
                   map(self.oracle.refs.__getitem__, named))):
            for k in named:
                self._block(k)

    def _block(self, k: int) -> None:
        block = self.blocks[k]
        if block.ref_cnt != self.oracle.refs[k] or block.block_id != self.ids[k]:
            raise _Found("BLOCK-NO-WRITE", f"the block of key {k} was written by the policy")

    def sweep(self) -> None:
        """Every present key has its block, and the block its fields."""
        present = list(self.blocks)
        self._observe_blocks(present, "GET-PURE")
        if any(map(ne, map(_BLOCK_ID, self.blocks.values()), self.ids.values())):
            for k in present:
                self._block(k)

    # -- actions (model.actions.expand), a run of one kind at a time -------------
    # Only evict can fail softly (EVICT-LIVENESS), and it comes alone.

    def insert(self, actions: list[Action]) -> None:
        named = list(map(_SECOND, actions))
        written = list(map(_THIRD, actions))
        first = self.next_id
        ids = range(first, first + len(named))
        self.next_id = ids.stop
        new = list(map(self.make_block, written, ids))
        _consume(map(self.policy.insert, map(self.real, named), new))
        self.calls += len(named)
        oracle = self.oracle
        oracle.refs.update(zip(named, written, strict=True))
        if IDLE in written:  # inserted idle: the most recent idle key, in order
            for k, ref in zip(named, written, strict=True):
                if ref == IDLE:
                    oracle.idle[k] = None
        self.blocks.update(zip(named, new, strict=True))
        self.ids.update(zip(named, ids, strict=True))
        self._observe_blocks(named, "INSERT-ADDS")

    def finish_store(self, actions: list[Action]) -> None:
        named = list(map(_SECOND, actions))
        keys, blocks, oracle = self.keys, self.blocks, self.oracle
        mark = self.policy.mark_evictable if self.has_mark else None
        refs, idle = oracle.refs, oracle.idle
        for k in named:
            blocks[k].ref_cnt = refs[k] = IDLE
            if mark is not None:
                mark(keys[k])
            idle[k] = None
        if mark is not None:
            self.calls += len(named)
        self._observe_blocks(named, "MARK-KEEPS-MEMBERSHIP")

    def start_read(self, actions: list[Action]) -> None:
        named = list(map(_SECOND, actions))
        keys, blocks, oracle = self.keys, self.blocks, self.oracle
        unmark = self.policy.mark_non_evictable if self.has_mark else None
        refs, idle = oracle.refs, oracle.idle
        for k in named:
            ref = refs[k]
            if ref == IDLE:
                if unmark is not None:
                    unmark(keys[k])
                    self.calls += 1
                del idle[k]
            blocks[k].ref_cnt = refs[k] = ref + 1
        self._observe_blocks(named, "MARK-KEEPS-MEMBERSHIP")

    def end_read(self, actions: list[Action]) -> None:
        named = list(map(_SECOND, actions))
        keys, blocks, oracle = self.keys, self.blocks, self.oracle
        mark = self.policy.mark_evictable if self.has_mark else None
        refs, idle = oracle.refs, oracle.idle
        for k in named:
            ref = refs[k] - 1
            blocks[k].ref_cnt = refs[k] = ref
            if ref == IDLE:
                if mark is not None:
                    mark(keys[k])
                    self.calls += 1
                idle[k] = None
        self._observe_blocks(named, "MARK-KEEPS-MEMBERSHIP")

    def remove(self, actions: list[Action]) -> None:
        policy = self.policy
        for _, k in actions:
            key = self.keys[k]
            policy.remove(key)
            self.oracle.remove(k)
            del self.blocks[k], self.ids[k]
            got = policy.get(key)
            self.calls += 2
            if got is not None:
                self._presence(k, got, "REMOVE-DROPS")

    def touch(self, actions: list[Action]) -> None:
        for _, named in actions:
            self.policy.touch(list(map(self.real, named)))
            self.calls += 1
            self.oracle.touch(named)
            self._observe(named, "TOUCH-KEEPS-MEMBERSHIP")

    def get(self, actions: list[Action]) -> None:
        self._observe(list(map(_SECOND, actions)), None)

    def clear(self, actions: list[Action]) -> None:
        for _ in actions:
            self.policy.clear()
            self.calls += 1
            gone = list(self.blocks)
            self.oracle.clear()
            self.blocks.clear()
            self.ids.clear()
            self._observe(gone, "CLEAR-EMPTIES")

    def evict(self, actions: list[Action]) -> None:
        for _, n, protected in actions:
            self._evict(n, protected)

    def _evict(self, n: int, protected: frozenset[int]) -> None:
        policy = self.policy
        result = policy.evict(n, set(map(self.real, protected)))
        self.calls += 1
        oracle = self.oracle
        if n == 0:
            self.zero += 1
        if result is None:
            self.refused += 1
            self._refused(n, protected)
            return
        victims = self._victims(n, result)
        if not self.exact or victims != oracle.lru_victims(n, protected):
            self._judge_victims(n, protected, victims)
        self.evicted += 1
        oracle.commit(victims)
        blocks, ids = self.blocks, self.ids
        for k in victims:
            del blocks[k], ids[k]
        self._observe(victims, "EVICT-REMOVES")

    def _victims(self, n: int, result: object) -> list[int]:
        """The model keys of a list result, checking shape and identity."""
        if not isinstance(result, list):
            raise _Found("EVICT-SHAPE", f"evict({n}, ...) returned a {type(result).__name__}")
        refs, blocks, model_of = self.oracle.refs, self.blocks, self.model_of
        victims: list[int] = []
        for item in result:
            if not (isinstance(item, tuple) and len(item) == 2):
                raise _Found("EVICT-SHAPE", f"evict({n}, ...) returned an item {item!r}")
            real, block = item
            try:
                k = model_of.get(real)
            except TypeError:
                k = None
            if k is None or k not in refs:
                raise _Found("EVICT-IDLE-ONLY", f"evict({n}, ...) returned an absent key")
            if block is not blocks[k]:
                raise _Found("EVICT-IDENTITY", f"evict({n}, ...) returned another object")
            victims.append(k)
        return victims

    def _judge_victims(self, n: int, protected: frozenset[int], victims: list[int]) -> None:
        violation = self.oracle.evict_violation(n, protected, victims)
        if violation is not None:
            raise _Found(violation, f"evict({n}, {sorted(protected)}) returned {victims}")
        if self.exact:
            raise _Found("LRU-EVICT-ORDER", f"evict({n}, {sorted(protected)}) returned "
                         f"{victims}, not {self.oracle.lru_victims(n, protected)}")

    def _refused(self, n: int, protected: frozenset[int]) -> None:
        """evict returned None: allowed only with too few eligible keys (a
        SHOULD in core, a MUST in lru), never for n == 0; and nothing may
        have changed: the keys a policy would have taken first are still
        there."""
        oracle = self.oracle
        if n == 0:
            raise _Found("EVICT-ZERO", "evict(0, ...) returned None")
        if self.exact and oracle.lru_victims(n, protected) is not None:
            raise _Found("LRU-LIVENESS", f"evict({n}, {sorted(protected)}) returned None")
        self._observe(list(islice(oracle.idle, min(n, 8))), "EVICT-ATOMIC")
        if oracle.eligible_count(protected) >= n:
            raise _Found("EVICT-LIVENESS", f"evict({n}, {sorted(protected)}) returned None")


# Requirement ids each kind of action checks in the driver.
_BASE = ("API-NO-RAISE", "BLOCK-NO-WRITE")
_MARKED = (*_BASE, "MARK-KEEPS-MEMBERSHIP")
_BY_KIND = {
    "insert": (*_BASE, "INSERT-ADDS", "GET-IDENTITY"),
    "finish_store": _MARKED,
    "start_read": _MARKED,
    "end_read": _MARKED,
    "remove": ("API-NO-RAISE", "REMOVE-DROPS", "GET-ABSENT"),
    "touch": ("API-NO-RAISE", "TOUCH-TOTAL", "TOUCH-KEEPS-MEMBERSHIP"),
    "evict": ("API-NO-RAISE", "EVICT-SHAPE", "EVICT-EXACT-N", "EVICT-IDLE-ONLY",
              "EVICT-UNPROTECTED", "EVICT-LIVENESS"),
    "get": ("API-NO-RAISE", "GET-IDENTITY", "GET-ABSENT"),
    "clear": ("API-NO-RAISE", "CLEAR-EMPTIES"),
}


def _count_checks(
    run: EngineRun, driver: _Driver, kinds: Counter[str], exact: bool, profile: Profile
) -> None:
    checked = run.checked
    for kind, count in kinds.items():
        for rid in _BY_KIND[kind]:
            checked[rid] += count
    checked["EVICT-IDENTITY"] += driver.evicted
    checked["EVICT-REMOVES"] += driver.evicted
    checked["EVICT-ATOMIC"] += driver.refused
    checked["EVICT-ZERO"] += driver.zero
    if exact and profile.refinement is not None:
        checked[profile.refinement.order_requirement] += kinds["evict"]
        checked[profile.refinement.liveness_requirement] += kinds["evict"]


# -- any other refinement: the full harness ------------------------------------


def _run_lockstep(
    run: EngineRun,
    subject: Subject,
    profile: Profile,
    capacity: int,
    source: ActionSource,
    deadline: float,
    steps: int,
    examples: int | None,
) -> None:
    soft: dict[str, tuple[Action, ...]] = {}
    while (run.examples < examples) if examples is not None else (monotonic() < deadline):
        harness = Lockstep(subject, profile, capacity, observe=False)
        try:
            for _ in range(steps):
                harness.apply(source.next(harness.state))
        except ConformanceFailure as failure:
            _judge(run, subject, profile, capacity, list(failure.trace),
                   _Found(failure.requirement, failure.message))
        except CallTimeout:
            run.add(Finding("API-RETURNS", "a policy call did not return within the time "
                            "limit", tuple(harness.trace), ENGINE))
        run.calls += harness.calls
        run.steps += len(harness.trace)
        run.examples += 1
        run.checked.update(harness.checked)
        for soft_failure in harness.soft:
            soft.setdefault(soft_failure.requirement, soft_failure.trace)
        if run.findings or run.error:
            break
    for requirement, trace in soft.items():
        _judge(run, subject, profile, capacity, list(trace), _Found(requirement, "soft"))


# -- judging and shrinking --------------------------------------------------------------


def _judge(
    run: EngineRun,
    subject: Subject,
    profile: Profile,
    capacity: int,
    trace: list[Action],
    found: _Found,
) -> None:
    """Replay ``trace`` in the full harness; report what it finds, shrunk.
    A SHOULD failure is replayed with only that requirement fatal."""
    watch.op = None
    fatal = None
    known = load_registry().get(found.requirement)
    if known is not None and known.level != "MUST":
        wanted = found.requirement
        fatal = lambda rid: rid == wanted  # noqa: E731
    failure = failure_of(subject, profile, capacity, trace, fatal=fatal)
    if failure is None:
        failure = failure_of(subject, profile, capacity, trace, observe=False, fatal=fatal)
    if failure is None:
        run.error = (
            f"the fast engine saw {found.requirement} ({found.message}) after {len(trace)} "
            "actions, but the lockstep harness does not reproduce it (a non-deterministic "
            "policy, or a bug in policyspec)"
        )
        return
    requirement = failure.requirement
    small = _shrink(subject, profile, capacity, failure.trace, requirement)
    confirmed = failure_of(subject, profile, capacity, small, fatal=lambda r: r == requirement)
    message = confirmed.message if confirmed is not None else failure.message
    run.add(Finding(requirement, message, small, ENGINE, shrunk=True))


def _shrink(
    subject: Subject, profile: Profile, capacity: int, trace: Sequence[Action], requirement: str
) -> tuple[Action, ...]:
    """Shrink without ``get`` observation when the failure shows without it
    (replays are much cheaper), and make sure the result fails observed too."""
    observed = fails_with(subject, profile, capacity, requirement)
    quick = fails_with(subject, profile, capacity, requirement, observe=False)
    if quick(trace):
        small = _minimise(trace, quick)
        if observed(small):
            return small
    return _minimise(trace, observed)


def _minimise(trace: Sequence[Action], fails: Callable[[Sequence[Action]], bool]
              ) -> tuple[Action, ...]:
    """The generic shrinker, then rounds of: forget keys, evict fewer,
    shrink again, until a round gains nothing (at most four)."""
    best = shrink(trace, fails)
    for _ in range(4):
        before = best
        best = shrink(_fewer_evicted(_drop_keys(best, fails), fails), fails)
        if best == before:
            break
    return best


def _fewer_evicted(trace: tuple[Action, ...], fails: Callable[[Sequence[Action]], bool]
                   ) -> tuple[Action, ...]:
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


def _drop_keys(trace: Sequence[Action], fails: Callable[[Sequence[Action]], bool]
               ) -> tuple[Action, ...]:
    """Forget one key at a time (every action on it, and the key in touches
    and protected sets) while the failure stays: runs of stores and loads
    tie actions together that the chunk-wise shrinker cannot cut apart."""
    best = tuple(trace)
    for key in dict.fromkeys(k for a in trace for k in _keys_of(a)):
        candidate = _without(best, key)
        if candidate and _size(candidate) < _size(best) and fails(candidate):
            best = candidate
    return best


def _size(trace: Sequence[Action]) -> tuple[int, int]:
    """Shorter first, then fewer keys named."""
    return len(trace), sum(len(_keys_of(a)) for a in trace)


def _keys_of(action: Action) -> tuple[int, ...]:
    op = action[0]
    if op == "touch":
        return tuple(action[1])
    if op == "evict":
        return tuple(sorted(action[2]))
    if op == "clear":
        return ()
    return (action[1],)


def _without(trace: Sequence[Action], key: int) -> tuple[Action, ...]:
    out: list[Action] = []
    for action in trace:
        op = action[0]
        if op == "touch":
            out.append(("touch", tuple(k for k in action[1] if k != key)))
        elif op == "evict":
            out.append(("evict", action[1], action[2] - {key}))
        elif op == "clear" or action[1] != key:
            out.append(action)
    return tuple(out)
