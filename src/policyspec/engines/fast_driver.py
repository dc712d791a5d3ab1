"""The fast engine's driver: one policy and its oracle, action by action.

Each handler makes the manager's calls for a run of actions, moves a
``FastOracle`` the same way and checks cheaply what the calls returned; the
first difference raises ``Difference`` and the full harness judges it.
Written for speed: plain loops wherever the policy is called (a call made
through ``map`` costs more on CPython; measured: benchmarks/results.txt).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from itertools import islice, repeat
from operator import attrgetter
from typing import Any, ClassVar

from policyspec.engines.fast_oracle import FastOracle
from policyspec.environment import active
from policyspec.harness.shapes import keys_shape, passed, set_shape
from policyspec.harness.watchdog import CallTimeout
from policyspec.model.state import IDLE
from policyspec.model.step import Refinement
from policyspec.sources.action_source import Run
from policyspec.subject import Subject
from policyspec.vllm.standins.gaps import raise_if_gap

__all__ = ["Difference", "Driver", "failed_call"]


class Difference(Exception):
    """The driver saw a difference; the harness will judge it."""

    def __init__(self, requirement: str, message: str) -> None:
        super().__init__(f"{requirement}: {message}")
        self.requirement = requirement
        self.message = message


def failed_call(exc: BaseException, call: str, text: Callable[[str], str] = str) -> Difference:
    """What a legal call that did not return normally shows: API-RETURNS when
    the time limit ended it, API-NO-RAISE when it raised (``text`` words the
    exception's keys); policyspec's own gap is raised instead, never judged."""
    if isinstance(exc, CallTimeout):
        return Difference("API-RETURNS", f"a policy call in {call} did not return within the "
                          "time limit")
    raise_if_gap(exc)
    return Difference("API-NO-RAISE", f"{call} raised {type(exc).__name__}: {text(str(exc))}")


_REF_CNT = attrgetter("ref_cnt")
_BLOCK_ID = attrgetter("block_id")


class Driver:
    """One policy and its oracle; ``HANDLERS`` maps each kind of action to
    the method that runs a list of them (see the module text). A class-level
    table, not bound methods on the instance: those would make every driver
    a reference cycle that lingers until a full garbage collection."""

    HANDLERS: ClassVar[dict[str, Callable[[Driver, Run], int]]]

    def __init__(
        self,
        subject: Subject,
        capacity: int,
        keys: Sequence[Hashable],
        model_of: dict[Hashable, int],
        refinement: Refinement | None,
    ) -> None:
        """``keys``: the real key of each model key the source draws;
        ``model_of``: back again (a ``KeyMap``'s index); ``refinement``: an
        exact profile's (one that ``keeps_idle_order``), or None for core."""
        self.environment = subject.environment()
        """The policy's clock and random stream (policyspec.environment): the
        engine puts it in place for each chunk of calls."""
        with active(self.environment):
            self.policy = subject.build(capacity)
        self.make_block = subject.make_block
        self.make_request = subject.make_request
        self.contexts: dict[int, Any] = {}
        """The ``ReqContext`` of each request (kept across clears, as the
        manager's are)."""
        self.hooks = 0
        """Request hook calls made (each one checked: see ``request``)."""
        self.lookups = 0
        """get calls of the keys requests offered (checked as a get run's)."""
        self.has_mark = subject.has("mark")
        self.exact = refinement is not None
        self.order_id = refinement.order_requirement if refinement is not None else ""
        self.liveness_id = refinement.liveness_requirement if refinement is not None else ""
        self.keys = keys
        self.real = keys.__getitem__
        self.model_of = model_of
        self.oracle = FastOracle(capacity)
        self.blocks: dict[int, Any] = {}
        self.ids: dict[int, int] = {}
        self.inserted_idle: set[int] = set()
        """Idle keys inserted idle and not marked since (rare): a victim
        outside this set became idle through mark_evictable."""
        self.next_id = 0
        self.calls = 0
        self.evicted = self.refused = self.zero = 0
        self.evict_checks: Counter[str] = Counter()
        """The ids each eviction's outcome showed (as ``ProfileModel.step``
        counts them: only what it could have got wrong in that state)."""

    # -- checks -------------------------------------------------------------------

    def _presence(self, k: int, got: object, requirement: str) -> None:
        """``got`` (from get) is wrong for key ``k``: name the requirement as
        the harness does."""
        block = self.blocks.get(k)
        if block is not None and got is not None:
            raise Difference("GET-IDENTITY", f"get({k}) returned another object than the block")
        state = "present" if block is not None else "absent"
        raise Difference(requirement, f"get({k}) returned {got!r} although key {k} is {state}")

    def _observe(self, named: Sequence[int], requirement: str | None) -> None:
        """get of every key in ``named`` answers as the oracle says. A None
        requirement means GET-IDENTITY or GET-ABSENT, by the key's presence."""
        self.calls += len(named)
        get, keys, held = self.policy.get, self.keys, self.blocks.get
        for k in named:
            got = get(keys[k])
            if got is not held(k):
                rid = requirement or ("GET-IDENTITY" if k in self.blocks else "GET-ABSENT")
                self._presence(k, got, rid)

    def _observe_blocks(self, named: Sequence[int], requirement: str) -> None:
        """``_observe`` for present keys, and the ref_cnt of each one's block
        is what the manager wrote (block ids: every sweep)."""
        self.calls += len(named)
        get, keys, blocks, refs = self.policy.get, self.keys, self.blocks, self.oracle.refs
        for k in named:
            block = blocks[k]
            got = get(keys[k])
            if got is not block:
                self._presence(k, got, requirement)
            if block.ref_cnt != refs[k]:
                self._block(k)

    def _block(self, k: int) -> None:
        block = self.blocks[k]
        if block.ref_cnt != self.oracle.refs[k] or block.block_id != self.ids[k]:
            raise Difference("BLOCK-NO-WRITE", f"the block of key {k} was written by the policy")

    def sweep(self) -> None:
        """Every present key has its block, and the block its fields. The
        driver's ``blocks`` and ``ids`` and the oracle's ``refs`` gain and
        lose keys together, so their values line up and compare as lists;
        only a difference pays for the per-key check that names it."""
        blocks = self.blocks
        self._observe(list(blocks), "GET-KEEPS-MEMBERSHIP")
        held = blocks.values()
        if (list(map(_REF_CNT, held)) != list(self.oracle.refs.values())
                or list(map(_BLOCK_ID, held)) != list(self.ids.values())):
            for k in list(blocks):
                self._block(k)

    # -- runs (generate.Run) of one kind, as model.actions.expand spells out
    # each action. A handler returns the number of actions in its run. Only
    # evict can fail softly (EVICT-LIVENESS), and it comes alone.

    def insert(self, run: Run) -> int:
        named, ref = run[1], run[2]
        make, insert, keys = self.make_block, self.policy.insert, self.keys
        blocks, ids, refs = self.blocks, self.ids, self.oracle.refs
        block_id = self.next_id
        if len(run) == 4:  # R9: each insert carries its request's context
            ctx = self.context(run[3])
            for k in named:
                block = make(ref, block_id)
                insert(keys[k], block, ctx)  # type: ignore[call-arg]
                blocks[k] = block
                ids[k] = block_id
                refs[k] = ref
                block_id += 1
        else:
            for k in named:
                block = make(ref, block_id)
                insert(keys[k], block)
                blocks[k] = block
                ids[k] = block_id
                refs[k] = ref
                block_id += 1
        self.next_id = block_id
        self.calls += len(named)
        if ref == IDLE:  # inserted idle: the most recent idle keys, in order
            self.oracle.idle.update(zip(named, repeat(None)))
            self.inserted_idle.update(named)
        self._observe_blocks(named, "INSERT-ADDS")
        return len(named)

    def finish_store(self, run: Run) -> int:
        named = run[1]
        keys, blocks, oracle = self.keys, self.blocks, self.oracle
        refs, idle = oracle.refs, oracle.idle
        if self.has_mark:
            mark = self.policy.mark_evictable
            for k in named:
                blocks[k].ref_cnt = refs[k] = IDLE
                mark(keys[k])
                idle[k] = None
            self.calls += len(named)
            if self.inserted_idle:
                self.inserted_idle.difference_update(named)
        else:
            for k in named:
                blocks[k].ref_cnt = refs[k] = IDLE
                idle[k] = None
        self._observe_blocks(named, "MARK-KEEPS-MEMBERSHIP")
        return len(named)

    def start_read(self, run: Run) -> int:
        named = run[1]
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
        return len(named)

    def end_read(self, run: Run) -> int:
        named = run[1]
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
                self.inserted_idle.discard(k)
        self._observe_blocks(named, "MARK-KEEPS-MEMBERSHIP")
        return len(named)

    def remove(self, run: Run) -> int:
        policy = self.policy
        for k in run[1]:
            key = self.keys[k]
            policy.remove(key)
            self.oracle.remove(k)
            del self.blocks[k], self.ids[k]
            self.inserted_idle.discard(k)
            got = policy.get(key)
            self.calls += 2
            if got is not None:
                self._presence(k, got, "REMOVE-DROPS")
        return len(run[1])

    def touch(self, run: Run) -> int:
        named = run[1]
        self.policy.touch(passed(keys_shape("touch", named), list(map(self.real, named))))
        self.calls += 1
        self.oracle.touch(named)
        self._observe(named, "TOUCH-KEEPS-MEMBERSHIP")
        return 1

    def get(self, run: Run) -> int:
        self._observe(run[1], None)
        return len(run[1])

    # -- the request level (request_source.py; spec/request.md). A hook
    # changes nothing core sees (HOOK-KEEPS-MEMBERSHIP): the oracle does
    # not move, and get of the keys a hook named must answer as before;
    # a key it dropped or pinned elsewhere shows in a later eviction, get
    # or sweep, and the harness's replay names the hook. A raise is the
    # engine's generic one; the harness names it HOOK-TOTAL.

    def context(self, r: int) -> Any:
        """The ``ReqContext`` of request ``r`` (made at its first use)."""
        ctx = self.contexts.get(r)
        if ctx is None:
            assert self.make_request is not None, "request traffic needs the hooks capability"
            ctx = self.contexts[r] = self.make_request(f"policyspec-req-{r}")
        return ctx

    def request(self, run: Run) -> int:
        """The manager's lookups, then a request's positions and hooks, in
        order (``("request", r, actions, looked_up)``); an observation hook
        (``("hook", name, r, keys)``) is judged as on_request_access is."""
        looked_up = run[3]
        if looked_up:
            self._observe(looked_up, None)
            self.lookups += len(looked_up)
        ctx = self.context(run[1])
        keys, policy = self.keys, self.policy
        for action in run[2]:
            op = action[0]
            named = action[2]
            if op == "set_positions":
                place = ctx.set_offload_key_position
                for k, position in named:
                    place(keys[k], position)
                continue
            if op == "hook":  # ("hook", name, r, keys): an observation hook
                named = action[3]
                hook = getattr(policy, action[1])
            else:
                hook = policy.on_store_miss if op == "on_store_miss" else policy.on_request_access  # type: ignore[attr-defined]
            hook(passed(keys_shape(op, named), [keys[k] for k in named]), ctx)
            self.calls += 1
            self.hooks += 1
            self._observe(named, "HOOK-KEEPS-MEMBERSHIP")
        return len(run[2]) + len(looked_up)

    def on_request_finished(self, run: Run) -> int:
        _, r, groups, only, reused = run
        keys = self.keys
        self.policy.on_request_finished(  # type: ignore[attr-defined]
            tuple(tuple(keys[k] for k in group) for group in groups),
            passed(set_shape("insertion_only", only), [keys[k] for k in only]),
            passed(set_shape("reused", reused), [keys[k] for k in reused]),
            self.context(r),
        )
        self.calls += 1
        self.hooks += 1
        for group in groups:
            self._observe(group, "HOOK-KEEPS-MEMBERSHIP")
        return 1

    def clear(self, run: Run) -> int:
        self.policy.clear()
        self.calls += 1
        gone = list(self.blocks)
        self.oracle.clear()
        self.blocks.clear()
        self.ids.clear()
        self.inserted_idle.clear()
        self._observe(gone, "CLEAR-EMPTIES")
        return 1

    def clock(self, run: Run) -> int:
        """A clock step (``engines.clock_steps``): no call."""
        self.environment.step(run[1])
        return 1

    def evict(self, run: Run) -> int:
        _, n, protected = run
        oracle = self.oracle
        if n == 0:
            self.zero += 1
            self.evict_checks["EVICT-ZERO"] += 1
        else:
            self._count_evict(n, protected)
        result = self.policy.evict(n, passed(set_shape("evict", protected),
                                             list(map(self.real, protected))))
        self.calls += 1
        if result is None:
            self.refused += 1
            self._refused(n, protected)
            return 1
        victims = self._victims(n, result)
        if not self.exact or victims != oracle.lru_victims(n, protected):
            self._judge_victims(n, protected, victims)
        self.evicted += 1
        if n:
            self._count_victims(victims, protected)
        refs, idle = oracle.refs, oracle.idle
        blocks, ids = self.blocks, self.ids
        for k in victims:  # oracle.commit, and the driver forgets the blocks
            del refs[k], idle[k], blocks[k], ids[k]
        if self.inserted_idle:
            self.inserted_idle.difference_update(victims)
        self._observe(victims, "EVICT-REMOVES")
        return 1

    def _count_evict(self, n: int, protected: frozenset[int]) -> None:
        """The ids whatever this eviction returns will show (the rest is
        ``_count_victims``, once victims came back)."""
        checks, oracle = self.evict_checks, self.oracle
        eligible = oracle.eligible_count(protected)
        if eligible >= n:
            checks["EVICT-LIVENESS"] += 1
        if self.exact:
            checks[self.order_id] += 1
            if eligible >= n:
                checks[self.liveness_id] += 1

    def _count_victims(self, victims: list[int], protected: frozenset[int]) -> None:
        checks, oracle = self.evict_checks, self.oracle
        checks["EVICT-EXACT-N"] += 1
        checks["EVICT-IDLE-ONLY"] += 1
        if protected and any(k in oracle.idle for k in protected):
            checks["EVICT-UNPROTECTED"] += 1
        refs = oracle.refs.values()
        if min(refs) < IDLE:
            checks["INSERT-IN-FLIGHT-NOT-ELIGIBLE"] += 1
        if max(refs) > IDLE:
            checks["MARK-NON-EVICTABLE-PINS"] += 1
        if self.has_mark and not self.inserted_idle.issuperset(victims):
            checks["MARK-EVICTABLE-ELIGIBLE"] += 1

    def _victims(self, n: int, result: object) -> list[int]:
        """The model keys of a list result, checking shape, identity and
        that the policy did not write a victim's block either."""
        if not isinstance(result, list):
            raise Difference("EVICT-SHAPE", f"evict({n}, ...) returned a {type(result).__name__}")
        refs, blocks, ids, model_of = self.oracle.refs, self.blocks, self.ids, self.model_of
        victims: list[int] = []
        for item in result:
            if not (isinstance(item, tuple) and len(item) == 2):
                raise Difference("EVICT-SHAPE", f"evict({n}, ...) returned an item {item!r}")
            real, block = item
            try:
                k = model_of.get(real)
            except TypeError:
                k = None
            if k is None or k not in refs:
                raise Difference("EVICT-IDLE-ONLY", f"evict({n}, ...) returned an absent key")
            if block is not blocks[k]:
                raise Difference("EVICT-IDENTITY", f"evict({n}, ...) returned another object")
            if block.ref_cnt != refs[k] or block.block_id != ids[k]:
                raise Difference("BLOCK-NO-WRITE", f"the block of key {k} was written by the "
                                 "policy")
            victims.append(k)
        return victims

    def _judge_victims(self, n: int, protected: frozenset[int], victims: list[int]) -> None:
        violation = self.oracle.evict_violation(n, protected, victims)
        if violation is not None:
            raise Difference(violation, f"evict({n}, {sorted(protected)}) returned {victims}")
        if self.exact:
            raise Difference(self.order_id, f"evict({n}, {sorted(protected)}) returned "
                             f"{victims}, not {self.oracle.lru_victims(n, protected)}")

    def _refused(self, n: int, protected: frozenset[int]) -> None:
        """evict returned None: allowed only with too few eligible keys (a
        SHOULD in core, a MUST in lru), never for n == 0; and nothing may
        have changed: the keys a policy would have taken first are still
        there."""
        oracle = self.oracle
        if n == 0:
            raise Difference("EVICT-ZERO", "evict(0, ...) returned None")
        if self.exact and oracle.lru_victims(n, protected) is not None:
            raise Difference(self.liveness_id, f"evict({n}, {sorted(protected)}) returned None")
        self._observe(list(islice(oracle.idle, min(n, 8))), "EVICT-ATOMIC")
        if oracle.eligible_count(protected) >= n:
            raise Difference("EVICT-LIVENESS", f"evict({n}, {sorted(protected)}) returned None")


Driver.HANDLERS = {
    "insert": Driver.insert,
    "finish_store": Driver.finish_store,
    "remove": Driver.remove,
    "start_read": Driver.start_read,
    "end_read": Driver.end_read,
    "touch": Driver.touch,
    "evict": Driver.evict,
    "get": Driver.get,
    "clear": Driver.clear,
    "request": Driver.request,
    "on_request_finished": Driver.on_request_finished,
    "clock": Driver.clock,
}
