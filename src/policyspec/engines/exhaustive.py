"""The bounded-exhaustive engine: every caller-legal sequence of up to D
actions over K keys, each checked in lockstep with the model, for a model
checker's guarantee within those bounds (spec/exhaustive.md). A failure
lowers the depth limit to its length, so the shortest failing sequence is
found without running the shorter levels twice.
"""

from __future__ import annotations

import time
import zlib
from dataclasses import dataclass, replace
from itertools import combinations

from policyspec.harness import Aborted, ConformanceFailure, Lockstep
from policyspec.harness.snapshot import fork
from policyspec.model.actions import Action, is_legal
from policyspec.model.state import IDLE, IN_FLIGHT, State
from policyspec.profiles import Profile
from policyspec.run.context import Engine, EngineContext, capped
from policyspec.run.result import EngineRun, Finding
from policyspec.subject import Subject

__all__ = [
    "DEFAULT_BOUNDS",
    "Bounds",
    "candidate_actions",
    "run_exhaustive",
    "split_depth",
]


@dataclass(frozen=True)
class Bounds:
    """The search space (spec/exhaustive.md)."""

    depth: int = 4
    """Longest sequence of caller actions (4 with 3 keys: 79,210 sequences;
    5 with 3 keys: 2,027,950, which wants ``--shard``)."""
    keys: int = 3
    """Keys 0..keys-1; a key never named before stands for a never-inserted key."""
    touch_length: int = 2
    """touch lists have 0..touch_length keys (repeats allowed)."""
    protected_size: int = 1
    """evict's protected sets have 0..protected_size keys."""
    symmetry: bool = True
    """Run one sequence per class of sequences equal up to renaming keys.
    Sound only for policies whose behaviour does not depend on key values
    (including the hash order of sets); ``--no-symmetry`` turns it off."""
    strategy: str = "auto"
    """"copy" (deep-copy at branch points), "replay" (replay the prefix on a
    fresh policy) or "auto" (copy when the policy can be copied)."""


DEFAULT_BOUNDS = Bounds()


def _single_keys(used: int, bounds: Bounds) -> range:
    """Keys a one-key action may name: with symmetry, every key named so far
    and one fresh key (all fresh keys are alike)."""
    if bounds.symmetry:
        return range(min(used + 1, bounds.keys))
    return range(bounds.keys)


def _touch_lists(used: int, bounds: Bounds) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = []

    def grow(prefix: tuple[int, ...], named: int) -> None:
        out.append(prefix)
        if len(prefix) == bounds.touch_length:
            return
        for key in _single_keys(named, bounds):
            grow((*prefix, key), max(named, key + 1))

    grow((), used)
    return out


def _protected_sets(used: int, bounds: Bounds) -> list[frozenset[int]]:
    out: list[frozenset[int]] = []
    for size in range(bounds.protected_size + 1):
        for combo in combinations(range(bounds.keys), size):
            fresh = [k for k in combo if k >= used]
            if bounds.symmetry and fresh != list(range(used, used + len(fresh))):
                continue  # equal, up to renaming, to a set of the lowest fresh keys
            out.append(frozenset(combo))
    return out


def candidate_actions(
    state: State, used: int, bounds: Bounds, *, with_clear: bool = True,
    with_touch: bool = True,
) -> list[Action]:
    """Every action of the bounded domain in ``state`` that the caller
    contract allows, in a fixed order. ``used`` is how many keys the
    sequence has named so far (keys 0..used-1, by the canonical renaming).
    Without touch (R10) its lists are left out."""
    out: list[Action] = []
    singles = _single_keys(used, bounds)
    for key in singles:
        out.append(("insert", key, IN_FLIGHT))
        out.append(("insert", key, IDLE))
    for op in ("finish_store", "start_read", "end_read", "remove"):
        out.extend((op, key) for key in singles)
    if with_touch:
        out.extend(("touch", keys) for keys in _touch_lists(used, bounds))
    out.append(("evict", 0, frozenset()))
    protected = _protected_sets(used, bounds)
    for n in range(1, len(state.idle) + 2):
        out.extend(("evict", n, p) for p in protected)
    if with_clear:
        out.append(("clear",))
    return [a for a in out if is_legal(state, a)]


def named(action: Action, used: int) -> int:
    """``used`` after ``action``: keys are named in order 0, 1, 2, ..."""
    op = action[0]
    if op == "touch":
        keys: tuple[int, ...] | frozenset[int] = action[1]
    elif op == "evict":
        keys = action[2]
    elif op == "clear":
        keys = ()
    else:
        keys = (action[1],)
    return max(used, *(k + 1 for k in keys)) if keys else used


def split_depth(depth: int, shards: int) -> int:
    """The depth whose prefixes are dealt out to shards: deep enough that
    there are many more prefixes than shards (about 15 actions per level)."""
    level = 1
    while 15**level < 8 * shards and level < depth:
        level += 1
    return min(level, depth)


def _owner(prefix: list[Action], shards: int) -> int:
    """The shard (1..shards) a prefix belongs to: a stable hash of its text."""
    text = ";".join(
        ",".join(str(sorted(x)) if isinstance(x, frozenset) else str(x) for x in a) for a in prefix
    )
    return zlib.crc32(text.encode()) % shards + 1


class _Search:
    """One depth-first search; its counters become the EngineRun."""

    def __init__(
        self, subject: Subject, profile: Profile, capacity: int, bounds: Bounds,
        shard: tuple[int, int],
    ) -> None:
        self.subject = subject
        self.profile = profile
        self.capacity = capacity
        self.bounds = bounds
        self.shard, self.shards = shard
        self.split = split_depth(bounds.depth, self.shards)
        self.limit = bounds.depth
        self.with_clear = subject.has("clear")
        self.with_touch = subject.has("touch")
        self.run = EngineRun(engine="exhaustive")
        self.sequences = 0
        self.maximal = 0
        self.states: set[tuple[object, ...]] = set()
        self.copying = bounds.strategy != "replay"
        self.cap: float | None = None
        """The wall-time cap (``run.context.capped``)."""

    # -- harnesses ------------------------------------------------------------

    def _fresh(self) -> Lockstep:
        return Lockstep(self.subject, self.profile, self.capacity)

    def _drain(self, h: Lockstep, mine: bool = True) -> None:
        """Move the harness's counts into the run; a shard drops those of
        the shared prefixes another shard counts, so that shards add up."""
        if mine:
            self.run.checked.update(h.checked)
            self.run.calls += h.calls
        h.sightings.calls += h.calls
        h.checked.clear()
        h.calls = 0

    def _fork(self, h: Lockstep) -> Lockstep:
        self._drain(h)
        return fork(h)

    def _replay(self, trace: list[Action]) -> Lockstep:
        h = self._fresh()
        for action in trace:
            h.apply(action)
            self.run.steps += 1
        self._drain(h)
        return h

    def _branch(self, h: Lockstep, prefix: list[Action], index: int, count: int) -> Lockstep:
        """The harness for the index-th of ``count`` children of ``h``. The
        parent itself is used once it is no longer needed: for the last child
        when copying, for the first when replaying (later children replay
        ``prefix``; a policy in a child process allows one live copy only)."""
        if self.copying:
            if index == count - 1:
                return h
            try:
                return self._fork(h)
            except Exception as exc:  # a policy that cannot be copied: replay instead
                if self.bounds.strategy == "copy":
                    raise
                self.copying = False
                self.run.notes.append(
                    f"the policy cannot be deep-copied ({type(exc).__name__}); prefixes are "
                    "replayed on a fresh policy instead"
                )
        elif index == 0:
            return h
        return self._replay(prefix)

    # -- search ---------------------------------------------------------------

    def start(self) -> None:
        root = self._fresh()
        if self.bounds.strategy == "auto":
            try:
                self._fork(root)
            except Exception as exc:
                self.copying = False
                self.run.notes.append(
                    f"the policy cannot be deep-copied ({type(exc).__name__}: {exc}); "
                    "prefixes are replayed on a fresh policy instead"
                )
        self._explore(root, 0)

    def _mine(self, h: Lockstep, depth: int) -> bool:
        """Whether this shard counts a sequence of length ``depth`` (every
        shard runs the short prefixes above the split; shard 1 counts them)."""
        return self.shards == 1 or depth >= self.split or self.shard == 1

    def _explore(self, h: Lockstep, used: int) -> None:
        depth = len(h.trace)
        if depth >= self.limit:
            return
        if capped(self.cap):
            self.run.capped = True
            return
        actions = candidate_actions(h.state, used, self.bounds, with_clear=self.with_clear,
                                    with_touch=self.with_touch)
        if self.shards > 1 and depth + 1 == self.split:
            actions = [a for a in actions if _owner([*h.trace, a], self.shards) == self.shard]
        prefix = list(h.trace)
        for index, action in enumerate(actions):
            if depth >= self.limit:  # a failure below shortened the search
                return
            child = self._branch(h, prefix, index, len(actions))
            soft = len(child.soft)
            mine = self._mine(child, depth + 1)
            try:
                child.apply(action)
            except ConformanceFailure as failure:
                self._drain(child, mine)
                self._count(child, depth + 1)
                self.run.add(Finding(failure.requirement, failure.message, failure.trace,
                                     "exhaustive", shrunk=True))
                # From now on only strictly shorter sequences can matter.
                self.limit = min(self.limit, len(failure.trace) - 1)
                continue
            finally:
                if mine:
                    self.run.steps += 1
            self._drain(child, mine)
            self._count(child, depth + 1)
            for later in child.soft[soft:]:
                self.run.add(Finding(later.requirement, later.message, later.trace, "exhaustive"))
            self._explore(child, named(action, used))

    def _count(self, h: Lockstep, depth: int) -> None:
        if not self._mine(h, depth):
            return
        self.sequences += 1
        if depth == self.bounds.depth:
            self.maximal += 1
        state = h.state
        self.states.add((tuple(sorted(state.refs.items())), tuple(state.idle), repr(h.ext)))

    def finish(self, seconds: float) -> EngineRun:
        run = self.run
        for finding in run.findings:
            # Minimal in length when every shorter sequence ran: at most one
            # longer than the final limit.
            finding.shrunk = finding.shrunk and len(finding.trace) <= self.limit + 1
        b = self.bounds
        run.examples = self.sequences
        run.seconds = seconds
        run.counts = {"sequences": self.sequences, "maximal_sequences": self.maximal,
                      "model_states": len(self.states), "depth": b.depth, "keys": b.keys}
        scope = (
            f"depth {b.depth}, keys {b.keys}, touch lists <= {b.touch_length}, protected sets "
            f"<= {b.protected_size}, symmetry {'on' if b.symmetry else 'off'}"
        )
        if self.shards > 1:
            scope += f", shard {self.shard}/{self.shards} (split at depth {self.split})"
        how = "copy at branch points" if self.copying else "prefix replay"
        if self.limit == b.depth:
            done = f"all {self.sequences} legal sequences checked"
        else:
            done = (f"a sequence of length {self.limit + 1} failed, so only shorter ones were "
                    f"searched further; {self.sequences} legal sequences checked")
        run.notes.append(
            f"{scope}: {done} "
            f"({self.maximal} of length {b.depth}), {len(self.states)} distinct model states, "
            f"{run.calls} policy calls, {how}, {seconds:.1f}s"
        )
        return run


def run_exhaustive(ctx: EngineContext, bounds: Bounds | None = None) -> EngineRun:
    """Check every legal sequence within ``bounds`` (None: the defaults as
    ``--depth``, ``--keys`` and ``--no-symmetry`` tune them) in the part
    ``ctx.shard``; runs to the end (the bounds, not a clock, limit it)
    unless the wall-time cap comes first."""
    if bounds is None:
        bounds = replace(
            DEFAULT_BOUNDS,
            depth=ctx.options.depth or DEFAULT_BOUNDS.depth,
            keys=ctx.options.keys or DEFAULT_BOUNDS.keys,
            symmetry=ctx.options.symmetry,
        )
    shard = ctx.shard
    index, total = shard
    if not 1 <= index <= total:
        raise ValueError(f"shard {index}/{total}: K must be in 1..N")
    if bounds.depth < 0 or bounds.keys < 1:
        raise ValueError("depth must be >= 0 and keys >= 1")
    if bounds.strategy not in ("auto", "copy", "replay"):
        raise ValueError(f"strategy must be auto, copy or replay, not {bounds.strategy!r}")
    started = time.monotonic()
    search = _Search(ctx.subject, ctx.profile, ctx.capacity, bounds, shard)
    search.cap = ctx.cap
    try:
        search.start()
    except Aborted as aborted:  # a call that hangs: no point in going on
        hung = aborted.failure
        search.run.add(Finding(hung.requirement, hung.message, hung.trace, "exhaustive",
                               shrunk=True))
    return search.finish(time.monotonic() - started)


# Not a default engine: it runs when chosen (--engine exhaustive), bounded by
# --depth/--keys rather than by the budget.
ENGINES = (Engine("exhaustive", run_exhaustive, 0.5, default=False, shardable=True),)
