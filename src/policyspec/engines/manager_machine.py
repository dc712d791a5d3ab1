"""The manager-level Hypothesis state machine (spec/manager.md).

Where the policy machine calls the policy API directly, this one plays
vLLM's seed-era CPU offloading manager (spec/sources.md, C1-C12), with its
block-id pool and idle counter beside the policy, so that the manager's own
promises (MANAGER-BLOCK-IDS, MANAGER-IDLE-COUNT, MANAGER-NO-LOST-DATA) are
checked on top of every policy-level check.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from policyspec.engines.stateful import (
    CheckedMachine,
    MachineStats,
    run_machine,
    stamp_capacity,
)
from policyspec.environment import active
from policyspec.harness import Lockstep, failure_type
from policyspec.harness.lockstep import block_id_of
from policyspec.model.actions import is_legal
from policyspec.model.state import IDLE, IN_FLIGHT
from policyspec.profiles import Profile
from policyspec.run.context import Engine, EngineContext
from policyspec.run.result import EngineRun
from policyspec.sources.sizes import CAPACITIES, FILL_MOST, LENGTHS, sizes_up_to
from policyspec.subject import Subject
from policyspec.vllm.standins.gaps import raise_if_gap

__all__ = [
    "ManagerMachine",
    "ManagerOptions",
    "manager_machine",
    "request_keys",
    "requests",
    "run_manager",
]

FAMILIES = 4
"""Requests come in families; one family's requests share a trunk prefix."""
BRANCHES = 3
"""Past its trunk a request follows one of a few branches."""
MAX_REQUEST = 24
"""Longest request, in blocks."""


def request_keys(family: int, branch: int, length: int) -> tuple[int, ...]:
    """The model keys of a request: family ``f`` shares its first
    ``4 + 6 f`` keys (``100 f + i``) with every request of the family, then
    branch ``b`` continues with keys ``100 f + 25 (b + 1) + i``. Distinct
    (family, branch, position) give distinct keys, all below 400."""
    trunk = 4 + 6 * family
    base = 100 * family
    return tuple(
        base + i if i < trunk else base + 25 * (branch + 1) + i for i in range(length)
    )


LONG_BASE = 1_000_000
"""Keys of long requests (large examples) start here, one million apart
per family, so that they never meet the short requests' keys."""


def long_request_keys(family: int, branch: int, length: int) -> tuple[int, ...]:
    """A long prompt's model keys: ``request_keys`` scaled up. Family ``f``
    shares its first ``64 (f + 1)`` keys with the family's other long
    requests, then branch ``b`` continues on a range of its own; distinct
    (family, branch, position) give distinct keys for lengths below
    100,000."""
    trunk = 64 * (family + 1)
    base = LONG_BASE * (family + 1)
    return tuple(
        base + i if i < trunk else base + 100_000 * (branch + 1) + i for i in range(length)
    )


@cache
def requests(longest: int) -> st.SearchStrategy[tuple[int, ...]]:
    """Key lists of requests of 1..longest blocks."""
    return st.builds(
        request_keys,
        st.integers(0, FAMILIES - 1),
        st.integers(0, BRANCHES - 1),
        st.integers(1, max(1, longest)),
    )


@dataclass(frozen=True)
class ManagerOptions:
    """How the machine's harness checks."""

    observe: bool = False
    """The harness's presence sweep after every call; off by default (4x
    more examples): the audit after every manager step checks the blocks the
    manager holds instead."""
    fatal: Callable[[str], bool] | None = None
    """Which failures raise (the harness's default: MUST ones); it decides
    for the manager's checks too."""


class ManagerMachine(CheckedMachine):
    """vLLM's manager around one policy: an id pool of ``capacity`` ids, an
    idle counter, pending store and load jobs, all driven by requests."""

    subject: ClassVar[Subject]
    profile: ClassVar[Profile]
    options: ClassVar[ManagerOptions] = ManagerOptions()
    stats: ClassVar[MachineStats]

    def __init__(self) -> None:
        super().__init__()
        self.cap = self.capacity
        """This example's capacity: the manager's id pool (``size``)."""
        self.h = self._harness()
        self.fresh = 0
        """Next never-used id; ids below it were handed out at least once."""
        self.free: list[int] = []
        """Freed ids, reused most recently freed first (C1)."""
        self.owner: dict[int, int] = {}
        """Block id -> model key, for every id handed out and not freed."""
        self.held: dict[int, Any] = {}
        """Model key -> the block the manager built for it and still counts as live."""
        self.idle_count = 0
        """_num_evictable_cache_blocks (C12)."""
        self.stores: list[tuple[int, ...]] = []
        self.loads: list[tuple[int, ...]] = []
        self.stats.examples += 1

    def _harness(self) -> Lockstep:
        harness = Lockstep(self.subject, self.profile, self.cap, observe=self.options.observe,
                           fatal=self.options.fatal)
        harness.allocator = self._allocate
        return harness

    # -- manager bookkeeping --------------------------------------------------

    def _fail(self, requirement: str, message: str) -> None:
        failure = failure_type(requirement)(requirement, message, tuple(self.h.trace))
        stamp_capacity(failure, self.cap)
        if self.h.fatal(requirement):
            raise failure
        if all(f.requirement != requirement for f in self.h.soft):
            self.h.soft.append(failure)

    def _free_ids(self) -> int:
        return self.cap - self.fresh + len(self.free)

    def _allocate(self, key: int) -> int:
        """The manager's pool (C1): fresh ids first, then freed ids, LIFO."""
        if self.free:
            block_id = self.free.pop()
        else:
            block_id = self.fresh
            self.fresh += 1
        self.h.checked["MANAGER-BLOCK-IDS"] += 1
        for other, (ref, other_id) in self.h.written.items():
            if other_id == block_id:
                self._fail(
                    "MANAGER-BLOCK-IDS",
                    f"the manager hands block id {block_id} to key {key}, but present key "
                    f"{other} (ref_cnt {ref}) still has it: the id was freed for a block that "
                    "is still in use, so two blocks now share it",
                )
        self.owner[block_id] = key
        return block_id

    def _change_idle(self, delta: int, why: str) -> None:
        self.idle_count += delta
        self.h.checked["MANAGER-IDLE-COUNT"] += 1
        if self.idle_count < 0:
            self._fail(
                "MANAGER-IDLE-COUNT",
                f"the manager's idle counter went to {self.idle_count} after {why}; it "
                "counts present blocks with ref_cnt 0 and must never go below 0",
            )

    def _free_victims(self, raw: object, n: int) -> None:
        """What vLLM's manager does with evict's answer: free each returned
        block's id and lower the idle counter by the number returned."""
        if not isinstance(raw, list):
            return  # the harness has reported the shape
        freed: set[int] = set()
        for item in raw:
            if not (isinstance(item, tuple) and len(item) == 2):
                continue
            real, block = item
            k = self.h.model_key(real)
            mine = self.held.get(k) if k is not None else None
            ref = None if mine is None else mine.ref_cnt
            self.h.checked["MANAGER-NO-LOST-DATA"] += 1
            if mine is not None and ref != IDLE:
                what = "in flight (a store still writes it)" if ref == IN_FLIGHT else (
                    f"being read by {ref} load(s)"
                )
                self._fail(
                    "MANAGER-NO-LOST-DATA",
                    f"evict({n}, ...) returned key {k}, whose block is {what}: its data is "
                    "lost and its id goes back to the pool while still in use",
                )
            self._free_id(k, block, ref, freed, n)
        self._change_idle(-len(raw), f"evict returned {len(raw)} victim(s)")

    def _free_id(
        self, k: int | None, block: object, ref: int | None, freed: set[int], n: int
    ) -> None:
        block_id = getattr(block, "block_id", None)
        self.h.checked["MANAGER-BLOCK-IDS"] += 1
        problem = None
        if not isinstance(block_id, int) or block_id in freed:
            problem = f"block id {block_id!r} twice in one eviction"
        elif block_id not in self.owner:
            problem = f"block id {block_id}, which is not in use (already free or never given)"
        elif self.owner[block_id] != k:
            problem = (
                f"block id {block_id} for key {k}, but that id belongs to key "
                f"{self.owner[block_id]}"
            )
        elif ref != IDLE:
            problem = f"block id {block_id} of key {k}, whose block has ref_cnt {ref}, not 0"
        if problem is not None:
            self._fail(
                "MANAGER-BLOCK-IDS",
                f"after evict({n}, ...) the manager frees {problem}; every freed id must "
                "belong to an idle victim",
            )
        if isinstance(block_id, int) and block_id in self.owner and block_id not in freed:
            freed.add(block_id)
            self.held.pop(self.owner.pop(block_id), None)
            self.free.append(block_id)

    def _release(self, k: int) -> None:
        """Free the id of key ``k`` after a failed store removed it."""
        block = self.held.pop(k)
        self.owner.pop(block.block_id, None)
        self.free.append(block.block_id)

    def _peek(self, k: int) -> object:
        """The policy's get for an audit (an observation, like the
        harness's presence checks; not part of the trace)."""
        self.h.calls += 1
        try:
            with active(self.h.environment):
                return self.h.policy.get(self.h.key(k))
        except (Exception, SystemExit) as exc:  # the policy's own fault
            raise_if_gap(exc)
            self._fail("API-NO-RAISE", f"get(key {k}) raised {type(exc).__name__}: "
                       f"{self.h.keys.text(str(exc))}")
            return None

    def _audit(self) -> None:
        """Between two manager steps: every block the manager holds is still
        the policy's block for its key, and the idle counter equals the number
        of them the policy holds with ref_cnt 0."""
        checked = self.h.checked
        checked["MANAGER-NO-LOST-DATA"] += 1
        checked["MANAGER-IDLE-COUNT"] += 1
        idle = 0
        for k, block in list(self.held.items()):
            ref: int = block.ref_cnt
            got = self._peek(k)
            if got is block:
                idle += ref == IDLE
            elif got is not None:
                self._fail(
                    "MANAGER-NO-LOST-DATA",
                    f"get({k}) returns another object, with block id {block_id_of(got)}, not "
                    f"the block the manager stored for key {k} (block id {block_id_of(block)}): "
                    "a lookup would load another block's data",
                )
            elif ref != IDLE:
                state = "in flight" if ref == IN_FLIGHT else "being read"
                self._fail(
                    "MANAGER-NO-LOST-DATA",
                    f"key {k} is gone although its block is {state} (ref_cnt {ref}); only "
                    "the manager may drop it",
                )
        if idle != self.idle_count:
            self._fail(
                "MANAGER-IDLE-COUNT",
                f"the manager's idle counter is {self.idle_count}, but the policy holds "
                f"{idle} of the manager's blocks with ref_cnt 0 (C12)",
            )

    # -- manager operations ---------------------------------------------------

    def _prepare_store(self, keys: Sequence[int]) -> tuple[int, ...] | None:
        """prepare_store(keys): look up, make room, insert in offer order."""
        h = self.h
        for k in keys:
            self._apply(("get", k))
        to_store = [k for k in keys if k not in h.state.refs]
        need = len(to_store) - self._free_ids()
        if need > 0:
            if need > self.idle_count:
                note(f"prepare_store {list(keys)}: needs {need} victims, only "
                     f"{self.idle_count} idle -> refused without calling evict")
                return None
            self._apply(("evict", need, frozenset(keys)))
            raw = h.last_evict
            if raw is None:
                note(f"prepare_store {list(keys)}: evict({need}) refused")
                return None
            self._free_victims(raw, need)
        inserted: list[int] = []
        for k in to_store:
            action = ("insert", k, IN_FLIGHT)
            if not self._free_ids() or not is_legal(h.state, action):
                break  # only after a fault the harness has already recorded
            self._apply(action)
            if k in h.blocks:
                self.held[k] = h.blocks[k]
                inserted.append(k)
            else:  # the insert raised: give the id back
                block_id = next(i for i, o in self.owner.items() if o == k)
                del self.owner[block_id]
                self.free.append(block_id)
        note(f"prepare_store {list(keys)}: stores {inserted}"
             + (f" after evicting {need}" if need > 0 else ""))
        if inserted:
            self.stores.append(tuple(inserted))
        return tuple(inserted)

    def _complete_store(self, job: tuple[int, ...], success: bool) -> None:
        """complete_store: success readies the keys still in flight, failure
        removes them and frees their ids; ready keys are left alone (C3, C5)."""
        note(f"complete_store {list(job)} {'succeeds' if success else 'fails'}")
        for k in job:
            if k not in self.held or self.h.state.refs.get(k) != IN_FLIGHT:
                continue
            if success:
                self._apply(("finish_store", k))
                self._change_idle(+1, f"mark_evictable({k})")
            else:
                self._apply(("remove", k))
                self._release(k)

    # -- rules ----------------------------------------------------------------

    def _request(self, data: st.DataObject, *, store: bool = False) -> tuple[int, ...]:
        """Requests are at most half the cache (and at most MAX_REQUEST) long.
        In a large example one request in four is a long prompt of
        ``sizes.LENGTHS`` blocks, at most half the cache; a long store only
        while the cache holds fewer than ``sizes.FILL_MOST`` keys (the
        harness checks every block after every call: a cache of thousands
        costs the square), so caches above it never fill, and their long
        prompts are lookups, loads and touches of mostly absent keys."""
        if self.cap > self.capacity and data.draw(st.integers(0, 3), label="long?") == 3:
            most = self.cap // 2
            if store:
                most = min(most, FILL_MOST - len(self.h.state.refs))
            lengths = sizes_up_to(LENGTHS, most)
            if lengths and lengths[-1] > MAX_REQUEST:
                return long_request_keys(
                    data.draw(st.integers(0, FAMILIES - 1), label="family"),
                    data.draw(st.integers(0, BRANCHES - 1), label="branch"),
                    lengths[data.draw(st.integers(0, len(lengths) - 1), label="length")])
        longest = min(MAX_REQUEST, self.cap // 2)
        return data.draw(requests(longest), label="request")

    @rule(data=st.data())
    def prepare_store(self, data: st.DataObject) -> None:
        keys = self._request(data, store=True)
        self._prepare_store(keys)
        self._audit()

    @rule(data=st.data())
    def store_request(self, data: st.DataObject) -> None:
        """A store whose job completes at once: fills the cache with idle blocks."""
        keys = self._request(data, store=True)
        job = self._prepare_store(keys)
        if job:
            self.stores.pop()
            self._complete_store(job, True)
        self._audit()

    @precondition(lambda self: bool(self.stores))
    @rule(data=st.data(), success=st.booleans())
    def complete_store(self, data: st.DataObject, success: bool) -> None:
        index = data.draw(st.integers(0, len(self.stores) - 1), label="job")
        self._complete_store(self.stores.pop(index), success)
        self._audit()

    @rule(data=st.data())
    def prepare_load(self, data: st.DataObject) -> None:
        """The scheduler loads the hit prefix: leading keys present and ready."""
        keys = self._request(data)
        refs = self.h.state.refs
        hits: list[int] = []
        for k in keys:
            if k not in self.held or refs.get(k, IN_FLIGHT) < IDLE:
                break
            hits.append(k)
        note(f"prepare_load {list(keys)}: loads {hits}")
        for k in hits:
            if refs[k] == IDLE:
                self._change_idle(-1, f"mark_non_evictable({k})")
            self._apply(("start_read", k))
        if hits:
            self.loads.append(tuple(hits))
        self._audit()

    @precondition(lambda self: bool(self.loads))
    @rule(data=st.data())
    def complete_load(self, data: st.DataObject) -> None:
        index = data.draw(st.integers(0, len(self.loads) - 1), label="job")
        job = self.loads.pop(index)
        note(f"complete_load {list(job)}")
        for k in job:
            action = ("end_read", k)
            if k not in self.held or not is_legal(self.h.state, action):
                continue  # only after a fault already recorded
            self._apply(action)
            if self.h.state.refs.get(k) == IDLE:
                self._change_idle(+1, f"mark_evictable({k})")
        self._audit()

    @precondition(lambda self: self.subject.has("touch"))
    @rule(data=st.data())
    def touch(self, data: st.DataObject) -> None:
        """The scheduler touches every key of a request, absent ones too (C7)
        (up to vLLM 0.33: 0.34's manager has no touch)."""
        keys = self._request(data)
        note(f"touch {list(keys)}")
        self._apply(("touch", keys))
        self._audit()

    @rule(data=st.data())
    def lookup(self, data: st.DataObject) -> None:
        """lookup: get each key until the first miss (C8)."""
        keys = self._request(data)
        hits = 0
        for k in keys:
            self._apply(("get", k))
            if k not in self.h.state.refs:
                break
            hits += 1
        note(f"lookup {list(keys)}: {hits} hit(s)")
        self._audit()

    @precondition(lambda self: self.subject.has("clear") and bool(self.held))
    @rule(data=st.data())
    def reset(self, data: st.DataObject) -> None:
        """reset_cache (C9), rare on purpose: clear, counter to 0, pool
        refilled, pending jobs dropped."""
        if data.draw(st.integers(0, 7), label="reset?") != 0:
            return
        note("reset_cache")
        self._apply(("clear",))
        self.idle_count = 0
        self.fresh = 0
        self.free.clear()
        self.owner.clear()
        self.held.clear()
        self.stores.clear()
        self.loads.clear()
        self._audit()


def manager_machine(
    subject: Subject,
    profile: Profile,
    *,
    capacity: int = 64,
    observe: bool = False,
    fatal: Callable[[str], bool] | None = None,
    drawn: tuple[int, ...] = (),
) -> type[ManagerMachine]:
    """A manager machine class bound to one subject and profile. ``fatal``
    is handed to the harness (and decides for the manager checks too);
    ``drawn``: the capacities its examples draw from (empty: ``capacity``)."""
    attrs: dict[str, Any] = {
        "subject": subject,
        "profile": profile,
        "capacity": capacity,
        "drawn": drawn,
        "options": ManagerOptions(observe, fatal),
        "stats": MachineStats(),
    }
    return type(f"ManagerMachineFor_{profile.name}", (ManagerMachine,), attrs)


def run_manager(
    ctx: EngineContext,
    *,
    fatal: Callable[[str], bool] | None = None,
    observe: bool = False,
    steps: int = 40,
) -> EngineRun:
    """The manager engine: RATE examples of the machine per work unit
    (``ctx.examples``), until the wall-time cap at most; each example at a
    capacity of its own unless the capacity is fixed."""
    subject, profile, capacity = ctx.subject, ctx.profile, ctx.capacity
    drawn = () if ctx.capacity_fixed else (capacity, *(c for c in CAPACITIES if c > capacity))
    machine = manager_machine(subject, profile, capacity=capacity, observe=observe, fatal=fatal,
                              drawn=drawn)
    # run_machine only reads the class's ``stats`` and runs it as a state
    # machine. The manager's own findings are shrunk after the run by a
    # replay with its bookkeeping (engines.manager_replay).
    run = run_machine(
        machine, engine="manager", seed=ctx.seed, examples=ctx.examples(RATE),
        steps=steps, chunk=10, database=ctx.database, cap=ctx.cap,
    )
    machine.stats.count_capacities(run, capacity, bool(drawn))
    for finding in run.findings:
        if finding.capacity == capacity:
            finding.capacity = None  # the run's own is not repeated
    return run


RATE = 90.0
"""Examples per work unit (run.budget): calibrated in
benchmarks/results.txt, budgets."""


ENGINES = (Engine("manager", run_manager, 0.25, parts=2),)
