"""Which ARC requirement a divergence names (spec/arc.md#attribution).

``policyspec.witness.explain`` replays each prefix of a minimal failing
trace and runs the probes below after it; at the first prefix where a probe
newly differs, ``blame`` reads the answers and names the requirement of the
operation that went wrong. The whole eviction order alone cannot tell a
misplaced block in flight (invisible until its store completes), a wrong
target (which needs a large T1 to show) or a wrong replacement rule from a
wrong state, so ARC adds probes for each, and checks whether one target
value explains every answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from policyspec.model import arc as model_arc
from policyspec.model.actions import Action
from policyspec.model.arc import ArcState
from policyspec.model.probe import Probe, ProbeResult
from policyspec.model.state import IDLE, IN_FLIGHT, State
from policyspec.model.step import Measure, ProfileModel, Refinement

__all__ = ["FRESH", "ARCDiagnosis", "blame", "probes", "reconsider"]

Variant = Callable[[int | None], Refinement]
"""Builds the ARC refinement with its ghost lists and target bounded by the
given number (None: the capacity), as ``model.arc_profile.ARCRefinement``."""

FRESH = 1 << 40
"""Model keys from here on are the probes' own fresh blocks: no engine uses
them, so they are neither resident nor ghosts."""

TAIL = 2
"""Fresh idle blocks the order probes put at the end of T1 (room
permitting): a key in T2 that belongs to T1, or the other way round, then
comes out on the wrong side of them, whatever the target."""

_OP_REQUIREMENT = {
    "insert": "ARC-INSERT-T1",
    "remove": "ARC-REMOVE-NO-GHOST",
    "finish_store": "ARC-MARK-NO-EFFECT",
    "start_read": "ARC-MARK-NO-EFFECT",
    "end_read": "ARC-MARK-NO-EFFECT",
    "evict": "ARC-EVICT-ORDER",
    "clear": "ARC-CLEAR-RESET",
    "get": "ARC-GET-NO-EFFECT",
    "on_store_miss": "ARC-STORE-MISS-ADAPT",
    "on_request_access": "ARC-ACCESS-NO-EFFECT",
    "on_request_finished": "ARC-FINISH-REUSE",
}
"""The requirement of what each operation leaves behind (lists, target).
``set_positions`` is no policy call (the manager fills a request's
context), so a difference never starts there."""


_MOVES_KEYS = frozenset({"touch", "on_store_miss", "on_request_finished"})
"""Operations that move keys within or between the lists whatever their
ref_cnt: a probe that completes stores tells their effect on a key in
flight (after an insert or a mark it cannot tell a misplaced block from a
mark that moves it)."""


class ARCDiagnosis:
    """``model.step.Diagnosis`` for the arc profile: ``probes`` and
    ``blame`` below, with ``variant`` to replay the model."""

    def __init__(self, variant: Variant) -> None:
        self.variant = variant

    def probes(self, ext: Any, state: State) -> list[Probe]:
        return probes(ext, state)

    def blame(
        self, history: Sequence[Action], action: Action, ext: Any, state: State,
        results: Sequence[ProbeResult], previous: Sequence[ProbeResult],
    ) -> str | None:
        return blame(history, action, ext, state, results, previous, self.variant)

    def reconsider(
        self, blamed: str, prefix: Sequence[Action], capacity: int | None, measure: Measure,
    ) -> tuple[str, str]:
        return reconsider(blamed, prefix, capacity, measure, self.variant)


def probes(arc: ArcState, state: State) -> list[Probe]:
    """``order``: evict every idle key, after ``TAIL`` fresh ones.
    ``t1``, ``t2``: complete every store and load (blocks in flight or
    being read then show where they sit), add the fresh ones, and evict one
    list's keys with the other list protected, which no target can reorder.
    ``hidden``: the same, every key at once. ``gauge1``, ``gauge2``: store
    fresh idle blocks (T1; a few more than twice the target, room
    permitting) and touch one, or several, of them (T2): where the first T2
    victim comes shows the target, for two sizes of T2."""
    found: list[Probe] = []
    room = (state.capacity or 0) - len(state.refs)
    fresh = list(range(FRESH, FRESH + min(room, TAIL)))
    tail = tuple(("insert", key, IDLE) for key in fresh)
    idle = sum(1 for ref in state.refs.values() if ref == IDLE)
    if idle:
        found.append(Probe("order", tail, idle + len(tail)))
    completion: list[Action] = []
    for key in [*arc.t1, *arc.t2]:
        ref = state.refs.get(key, IDLE)
        if ref == IN_FLIGHT:
            completion.append(("finish_store", key))
        completion.extend(("end_read", key) for _ in range(max(ref, 0)))
    setup = (*completion, *tail)
    t1 = [*arc.t1, *fresh]
    if t1:
        found.append(Probe("t1", setup, len(t1), frozenset(arc.t2)))
    if arc.t2:
        found.append(Probe("t2", setup, len(arc.t2), frozenset(t1)))
    if completion:
        found.append(Probe("hidden", setup, len(t1) + len(arc.t2)))
    size = min(room, 2 * int(arc.target) + 4)
    if size >= 3:
        gauge = tuple(range(FRESH, FRESH + size))
        stores = tuple(("insert", key, IDLE) for key in gauge)
        wide = max(2, min(size - 1, int(arc.target) + 1))
        everyone = idle + size
        found.append(Probe("gauge1", (*stores, ("touch", gauge[:1])), everyone))
        found.append(Probe("gauge2", (*stores, ("touch", gauge[:wide])), everyone))
    return found


def blame(
    history: Sequence[Action],
    action: Action,
    arc: ArcState,
    state: State,
    results: Sequence[ProbeResult],
    previous: Sequence[ProbeResult],
    variant: Variant,
) -> str | None:
    """The requirement ``action`` broke, given the probes' answers right
    after it and right before it (``previous``; ``arc`` and ``state``: the
    model before it; ``history``: the actions before it), or None when the
    answers do not incriminate it and the search goes on.

    Only new differences count, and a probe that completes stores or loads
    counts only after an operation that moves keys (``_MOVES_KEYS``):
    after an insert or a mark it cannot tell a misplaced block from a mark
    that moves it. A refusal is evict's
    (ARC-LIVENESS). A ``t1`` or ``t2`` difference means the lists are
    wrong: the operation's own requirement. Otherwise the lists are right
    and either no target value explains every answer (the replacement rule
    is wrong: ARC-EVICT-ORDER) or one does and the target is wrong: see
    ``_blame_target``."""
    op = action[0]
    if op not in _OP_REQUIREMENT and op != "touch":
        return None  # set_positions: the policy is not called
    moves = op in _MOVES_KEYS
    credible = [r for r in results if moves or not _completes(r.probe)]
    # A probe "persists" only as the same measurement: t1 with the stores
    # completed and t1 with nothing to complete are two.
    differed = {_kind(r.probe) for r in previous if r.differs and (
        history or r.probe.name not in ("t1", "t2"))}
    new = [r for r in credible if r.differs and _kind(r.probe) not in differed]
    if not new:
        return None
    if any(r.refused for r in new):
        # Eligibility is ref_cnt alone (ARC-MARK-NO-EFFECT) and core checks
        # membership, so a refusal with enough idle keys is evict's own.
        return "ARC-LIVENESS"
    if op == "get":
        return "ARC-GET-NO-EFFECT"
    if any(r.probe.name in ("t1", "t2") for r in new):
        if op != "touch":
            return _OP_REQUIREMENT[op]
        return _blame_touch_lists(action[1], arc, state, credible)
    top = max(_top(credible), _top(previous))
    explaining = _explaining_targets(credible, top)
    if not explaining:
        return "ARC-EVICT-ORDER"  # the lists are right, the victims for them are not
    return _blame_target(
        history, action, arc, state, credible, previous, explaining, top, variant
    )


def _kind(probe: Probe) -> tuple[str, bool]:
    return probe.name, _completes(probe)


def _completes(probe: Probe) -> bool:
    return any(step[0] in ("finish_store", "end_read") for step in probe.setup)


def _blame_touch_lists(
    keys: Sequence[int], arc: ArcState, state: State, results: Sequence[ProbeResult]
) -> str:
    """A touch left T1 or T2 wrong: the walk over resident keys, a key in
    flight, or a ghost's touch that moved a resident key."""
    resident = [k for k in keys if k in arc.t1 or k in arc.t2]
    if not resident:
        return "ARC-GHOST-ADAPT"  # a ghost's touch must not move resident keys
    in_flight = {k for k in resident if k in arc.t1 and not model_arc.is_ready(state, k)}
    wrong = _misplaced(results, resident) or set(resident)
    return "ARC-TOUCH-NOT-READY" if wrong <= in_flight else "ARC-TOUCH-ORDER"


def _blame_target(
    history: Sequence[Action], action: Action, arc: ArcState, state: State,
    results: Sequence[ProbeResult], previous: Sequence[ProbeResult], explaining: set[int],
    top: int, variant: Variant,
) -> str:
    """The lists are right and the policy acts on another target than the
    spec's. A touch that names absent keys, or a store miss of ghosts, is
    where the spec moves the target: a touch is judged by
    ``_blame_adaptation``, a store miss is ARC-STORE-MISS-ADAPT's. Any
    other operation may not move it, but a wrong target often shows only
    later (it needs a T1 shorter than itself and T2 candidates): when the
    target the policy acts on now fitted the answers before this operation
    too, the last earlier operation that could have moved it is judged
    instead (one of those two, or an insert of a ghost, which must leave the
    target alone: ARC-INSERT-T1), and the operation only when there is
    none."""
    moved = _moves_target(action, arc, history)
    if moved in _ADAPTING:
        return _blame_adaptation([*history, action], len(history), results, top, variant)
    if moved is not None:
        return moved
    earlier = _explaining_targets(previous, top) if previous else set()
    if explaining & earlier:
        for index in range(len(history) - 1, -1, -1):
            if history[index][0] not in ("touch", "on_store_miss", "insert"):
                continue  # the model replay below is the cost: skip what cannot move it
            then = _model_after(history[:index], state.capacity, variant(None)).ext
            moved = _moves_target(history[index], then, history[:index])
            if moved in _ADAPTING:
                return _blame_adaptation([*history, action], index, results, top, variant)
            if moved is not None:
                return moved
    if explaining & earlier and _grid(arc.target, top) not in earlier:
        # The target the policy acts on fitted before this operation, the
        # spec's did not already, and no operation before it could move it:
        # it was never moved, so the policy started from another target or
        # its rule reads it otherwise (only evict reads it).
        return "ARC-EVICT-ORDER"
    if action[0] == "touch":
        return "ARC-TOUCH-ORDER"  # a touch of resident keys moved the target
    return _OP_REQUIREMENT[action[0]]


def _moves_target(action: Action, arc: ArcState, history: Sequence[Action]) -> str | None:
    """Whether ``action`` (with ``arc`` the spec's lists before it) is an
    operation where a policy plausibly moves the target: its name for a
    touch or a store miss naming absent keys (judged further by
    ``_blame_adaptation``), ARC-INSERT-T1 for an insert of a ghost, else
    None."""
    op = action[0]
    if op in _ADAPTING:
        return op if _departed(_adapting_keys(action), arc, history) else None
    if op == "insert" and (action[1] in arc.b1 or action[1] in arc.b2):
        return "ARC-INSERT-T1"
    return None


def _departed(keys: Sequence[int], arc: ArcState, history: Sequence[Action]) -> list[int]:
    """Those of ``keys`` that were inserted in ``history`` and are absent
    (per ``arc``): ghosts, or keys a faulty policy may still hold as such."""
    inserted = {a[1] for a in history if a[0] == "insert"}
    return [k for k in keys if k in inserted and k not in arc.t1 and k not in arc.t2]


def _blame_adaptation(
    actions: Sequence[Action], index: int, results: Sequence[ProbeResult], top: int,
    variant: Variant,
) -> str:
    """The target is wrong after ``actions``, and ``actions[index]``, a touch
    or a store miss naming absent keys, is where it went wrong. Ghosts among
    them: the adaptation (ARC-GHOST-ADAPT for a touch, ARC-STORE-MISS-ADAPT
    for a store miss), unless the answers fit an ARC whose ghost lists were
    never trimmed to the capacity (ARC-EVICT-GHOSTS: a longer ghost list
    changes every adaptation's step, and a key trimmed away still counts as
    a ghost). Only keys that are no ghosts: the policy kept a ghost the spec
    had dropped, and the operation that dropped it is named
    (``_provenance``)."""
    before = actions[:index]
    capacity = results[0].state.capacity if results else None
    arc = _model_after(before, capacity, variant(None)).ext
    action = actions[index]
    keys = _adapting_keys(action)
    if any(k in arc.b1 or k in arc.b2 for k in keys):
        unbounded = _model_after(actions, capacity, variant(1 << 30)).ext
        explaining = _explaining_targets(results, top)
        spec = _grid(results[0].ext.target, top)
        if spec not in explaining and _grid(unbounded.target, top) in explaining:
            return "ARC-EVICT-GHOSTS"
        return _ADAPTING[action[0]]
    blamed = {
        _provenance(before, k, capacity, variant(None)) for k in _departed(keys, arc, before)
    }
    for requirement in ("ARC-EVICT-GHOSTS", "ARC-REMOVE-NO-GHOST", "ARC-CLEAR-RESET"):
        if requirement in blamed:
            return requirement
    return "ARC-TOUCH-ORDER" if action[0] == "touch" else "ARC-STORE-MISS-ADAPT"


_ADAPTING = {"touch": "ARC-GHOST-ADAPT", "on_store_miss": "ARC-STORE-MISS-ADAPT"}
"""The operations that adapt the target to ghosts they name, each with the
requirement of its adaptation."""


def _adapting_keys(action: Action) -> Sequence[int]:
    """The keys an adapting operation names: touch(keys), and a store miss
    (request, keys)."""
    return tuple(action[1] if action[0] == "touch" else action[2])


def _adapting_call(op: str, request: int, keys: tuple[int, ...]) -> Action:
    """An adapting operation naming ``keys``: a touch, or a store miss of
    ``request`` (the inverse of ``_adapting_keys``)."""
    return ("touch", keys) if op == "touch" else ("on_store_miss", request, keys)


def _misplaced(results: Sequence[ProbeResult], keys: Sequence[int]) -> set[int]:
    """Those of ``keys`` that a ``t1`` or ``t2`` probe shows elsewhere than
    the model has them (another list, or another place in it)."""
    wrong: set[int] = set()
    for r in results:
        if r.probe.name not in ("t1", "t2") or not r.differs:
            continue
        got, expected = r.got or [], r.expected or []
        for key in keys:
            where = got.index(key) if key in got else None
            if where != (expected.index(key) if key in expected else None):
                wrong.add(key)
    return wrong


def _explaining_targets(results: Sequence[ProbeResult], top: int) -> set[int]:
    """The target values (as ``_grid`` reduces them) that make the
    refinement evict exactly what the policy evicted in every probe (T1,
    T2 and the rest as the model has them). Only int(target) matters, 1
    acts as 0 (with no T1 entry left T1 has nothing to give either way),
    and every value from ``top`` (above the longest T1) on acts the same."""
    if any(r.broken for r in results):
        return set()
    return {
        target
        for target in (0, *range(2, top + 1))
        if all(
            r.got == model_arc.victims(replace(r.ext, target=target), r.state, r.probe.n,
                                       r.probe.protected)
            for r in results
        )
    }


def _top(results: Sequence[ProbeResult]) -> int:
    return max((len(r.ext.t1) for r in results), default=0) + 1


def _grid(target: float, top: int) -> int:
    value = min(int(target), top)
    return 0 if value == 1 else value


def _provenance(
    history: Sequence[Action], key: int, capacity: int | None, refinement: Refinement
) -> str:
    """The requirement of the last operation in ``history`` after which
    ``key`` was, per the spec, neither resident nor a ghost: an eviction
    that trimmed it from its ghost list, a remove, a clear. A key never
    inserted gives ARC-TOUCH-ORDER (touch ignores other keys)."""
    last = "ARC-TOUCH-ORDER"
    model = ProfileModel.fresh(refinement, capacity)
    for action in history:
        for call in model.calls(action):
            was_known = _known(model.ext, key)
            model = model.step(call).model
            if was_known and not _known(model.ext, key):
                last = {
                    "evict": "ARC-EVICT-GHOSTS",
                    "remove": "ARC-REMOVE-NO-GHOST",
                    "clear": "ARC-CLEAR-RESET",
                }.get(call[0], last)
    return last


def _known(arc: ArcState, key: int) -> bool:
    return key in arc.t1 or key in arc.t2 or key in arc.b1 or key in arc.b2


def _model_after(
    actions: Sequence[Action], capacity: int | None, refinement: Refinement
) -> ProfileModel:
    """The model after ``actions`` from a fresh policy of ``capacity``."""
    return ProfileModel.fresh(refinement, capacity).after(actions)


# -- a second look at an adaptation (spec/arc.md, Attribution) ----------------

HITS = 3
"""Ghost hits a calibration makes: three B1 hits move the spec's target
from 0 to 1, 2 and 3, enough to tell a target that moves by the spec's
steps from a fixed distance (1 acts as 0, so one hit alone shows nothing)."""

CALIBRATION = FRESH + (1 << 20)
"""The calibration's own keys: the probes' fresh keys start at ``FRESH``."""

CALIBRATION_REQUEST = 1 << 29
"""The requests a calibration's store misses belong to (probes use 1 << 30)."""


def reconsider(
    blamed: str, prefix: Sequence[Action], capacity: int | None,
    measure: Measure, variant: Variant,
) -> tuple[str, str]:
    """A second look at an adaptation blamed (``blamed`` is the requirement of
    a touch or store miss of ghosts): its answers say the policy acts on
    another target than the spec's after the ghost hit, which is also what a
    policy shows that adapts right but started from another target, was
    cleared to one, or reads the target otherwise in evict. A calibration
    tells them apart: ghost hits on a fresh policy (and after hits and a
    clear, when ``prefix`` has one), probed after each. Victims that fit no target, or a
    target at a fixed distance from the spec's through hits that move it,
    are evict's or the start's (the order requirement), or the clear's when
    only the clear shows them. Hits that move the target as the
    spec's when one evict made a whole capacity of ghosts, and move nothing
    when an evict of fewer made them, show a hook that learns and a trim
    that kept ghosts only then (``_kept_only_whole``: the evict's
    requirement). A target no hit moves otherwise is the hook ignoring
    ghosts or an evict keeping none, which no probe can tell apart:
    ``blamed`` stays (the hook is the likelier, spec/bugs.md G3), with both
    in the note.
    Last, a ghost the policy no longer had (``_dropped_ghosts``) is the
    evict's that trimmed it."""
    op = {v: k for k, v in _ADAPTING.items()}.get(blamed)
    if op is None or capacity is None:
        return blamed, ""
    order = variant(None).order_requirement
    fresh = _calibrated((), op, capacity, measure, variant)
    trimmed = _kept_only_whole(op, capacity, measure, variant, fresh)
    if trimmed:
        return "ARC-EVICT-GHOSTS", trimmed
    if fresh == _STILL:
        return blamed, f"{_STILL} on a fresh policy either: {_IGNORED}"
    if fresh not in (None, _FOLLOWS):
        return order, f"{fresh} on a fresh policy: {_READING}"
    if any(action[0] == "clear" for action in prefix):
        # (The target is moved before the clear: one that survives it shows.)
        moved = _ghost_hits((), op, min(HITS, capacity), CALIBRATION + HITS)[-1]
        cleared = _calibrated((*moved, ("clear",)), op, capacity, measure, variant)
        if cleared not in (None, _FOLLOWS, _STILL):
            return "ARC-CLEAR-RESET", (f"{cleared} after a clear, not on a fresh policy: "
                                       "the clear left another target than 0")
    dropped = _dropped_ghosts(op, prefix, capacity, measure, variant)
    if dropped:
        return "ARC-EVICT-GHOSTS", dropped
    return blamed, ""


def _kept_only_whole(
    op: str, capacity: int, measure: Measure, variant: Variant, fresh: str | None,
) -> str:
    """Whether the calibration's hits move the target as the spec does when
    one evict made a whole capacity of ghosts, and move nothing when an
    evict of fewer made them: then the hook learns from ghosts, and evict's
    trim kept them only in the first case (a trim by the remainder of the
    capacity). ``fresh`` is the calibration already run, whose ghosts one
    evict of ``min(HITS, capacity)`` made. The note for the report, or ''."""
    if capacity <= 2:
        return ""  # (fewer ghosts than a whole capacity would be one hit, which shows nothing)
    if capacity > HITS:  # the fresh calibration made fewer: make a whole capacity
        fewer, made = fresh, HITS
        whole = _calibrated((), op, capacity, measure, variant, made=capacity) if (
            fresh == _STILL) else None
    else:  # the fresh calibration made a whole capacity: make one ghost fewer
        whole, made = fresh, capacity - 1
        fewer = _calibrated((), op, capacity, measure, variant, made=made, hits=made) if (
            fresh == _FOLLOWS) else None
    if fewer != _STILL or whole != _FOLLOWS:
        return ""
    return (f"{_STILL} when an evict of {made} made the ghosts, and move it as the spec does "
            f"when one evict of {capacity} made them: the hook learns from ghosts, and evict "
            "kept them only in the second case (its trim went wrong)")


def _dropped_ghosts(
    op: str, prefix: Sequence[Action], capacity: int,
    measure: Measure, variant: Variant,
) -> str:
    """Whether ghosts the last adapting call of ``prefix`` names were gone
    from the policy, which the hook cannot be blamed for: the same call
    moves the target as the spec does when the ghosts it names are swapped
    for younger ones of the same list (a list is trimmed oldest first, so
    the younger outlive a trim that went too far), or, when every one was
    in B1, for ghosts made right then (a trim that emptied the list). The
    note for the report, or '' when neither trial does."""
    index = next((i for i in range(len(prefix) - 1, -1, -1) if prefix[i][0] == op), None)
    if index is None:
        return ""
    before, action = prefix[:index], prefix[index]
    model = _model_after(before, capacity, variant(None))
    arc, named = model.ext, _adapting_keys(action)
    swap: dict[int, int] = {}
    for ghosts in (arc.b1, arc.b2):
        mine = [k for k in named if k in ghosts]
        younger = [k for k in reversed(ghosts) if k not in named]
        swap.update(zip(mine, younger, strict=False))  # (the youngest keep their place)
    if swap and _only_swapped_adapt(op, before, action, swap, capacity, measure, variant):
        return (f"the same call naming younger ghosts instead ({sorted(swap.values())}) "
                f"moves the target as the spec does: the ghosts of {sorted(swap)} were "
                "gone, trimmed by an evict before their time")
    mine = [k for k in named if k in arc.b1]
    if not mine or any(k in arc.b2 for k in named):
        return ""
    made = {k: CALIBRATION + i for i, k in enumerate(mine)}
    if len(model.state.refs) + len(made) > capacity:
        return ""  # no room to make them
    making: tuple[Action, ...] = (
        *(("insert", k, IDLE) for k in made.values()),
        ("evict", len(made), frozenset(model.state.refs)),
    )
    if _only_swapped_adapt(op, (*before, *making), action, made, capacity, measure, variant):
        return (f"the same call naming ghosts made just before it instead moves the target "
                f"as the spec does: the ghosts of {sorted(made)} were gone, trimmed by an "
                "evict before their time")
    return ""


def _only_swapped_adapt(
    op: str, before: Sequence[Action], action: Action, swap: dict[int, int], capacity: int,
    measure: Measure, variant: Variant,
) -> bool:
    """Whether ``action`` after ``before`` moves the target as the spec does
    with its keys swapped, and does not with its own keys: the control,
    since a target the probes read only coarsely (a short T1) may fit the
    spec's and the policy's alike."""
    return (_adapts(op, before, action, swap, capacity, measure, variant)
            and not _adapts(op, before, action, {}, capacity, measure, variant))


def _adapts(
    op: str, before: Sequence[Action], action: Action, swap: dict[int, int], capacity: int,
    measure: Measure, variant: Variant,
) -> bool:
    """Whether ``action`` with its keys swapped, after ``before``, leaves the
    policy acting on the spec's target, where the spec moved it visibly."""
    keys = tuple(swap.get(k, k) for k in _adapting_keys(action))
    trial = (*before, _adapting_call(op, CALIBRATION_REQUEST, keys))
    results = measure(trial)
    if results is None:
        return False
    top = _top(results)
    was = _model_after(before, capacity, variant(None)).ext.target
    spec = _model_after(trial, capacity, variant(None)).ext.target
    return _grid(spec, top) != _grid(was, top) and _grid(spec, top) in _explaining_targets(
        results, top)


_STILL = "ghost hits move no target"

_FOLLOWS = "ghost hits move the target as the spec does"

_READING = ("the adaptation moves it by the spec's steps, so what differs is the target "
            "the policy starts from or the way evict reads it")

_IGNORED = ("the hook ignores ghosts, or (which no probe can tell apart from it) an evict "
            "keeps no ghost at all")


def _ghost_hits(start: tuple[Action, ...], op: str, hits: int, first: int,
                made: int | None = None) -> list[tuple[Action, ...]]:
    """After ``start``, ``made`` keys (``hits`` unless given) from ``first``
    on stored and evicted by one call (B1 ghosts), then the first ``hits``
    of them hit one at a time by ``op``: each prefix, from no hit to all
    of them."""
    ghosts = range(first, first + (hits if made is None else made))
    making: tuple[Action, ...] = (*start, *(("insert", g, IDLE) for g in ghosts),
                                  ("evict", len(ghosts), frozenset()))
    prefixes = [making]
    for i, ghost in enumerate(ghosts[:hits]):
        call = _adapting_call(op, CALIBRATION_REQUEST + first - CALIBRATION + i, (ghost,))
        prefixes.append((*prefixes[-1], call))
    return prefixes


def _calibrated(
    start: tuple[Action, ...], op: str, capacity: int, measure: Measure, variant: Variant,
    made: int | None = None, hits: int | None = None,
) -> str | None:
    """What the calibration after ``start`` shows, ``hits`` ghost hits
    (``min(HITS, capacity)`` unless given) on ghosts made by one evict of
    ``made`` keys (as many as it hits unless given): a phrase for the note
    when the policy's answers are not the spec's adaptation (a rule that
    fits no target, a fixed distance, no movement), ``_FOLLOWS`` when they
    are, None when it cannot tell (a list probe differs: another fault
    shows first)."""
    hits = min(HITS, capacity) if hits is None else hits
    prefixes = _ghost_hits(start, op, hits, CALIBRATION, made)
    seen: list[tuple[float, set[int], int]] = []
    for prefix in prefixes:
        results = measure(prefix)
        if results is None or any(r.differs and r.probe.name in ("t1", "t2", "hidden")
                                  for r in results):
            return None
        top = _top(results)
        target = _model_after(prefix, capacity, variant(None)).ext.target
        seen.append((target, _explaining_targets(results, top), top))
    if any(not explaining for _, explaining, _ in seen):
        return f"after {hits} ghost hits the victims fit no target"
    if all(_grid(target, top) in explaining for target, explaining, top in seen):
        return _FOLLOWS
    for distance in (*range(-hits - 1, 0), *range(1, hits + 2)):
        acted = [_grid(min(max(target + distance, 0), capacity), top)
                 for target, _, top in seen]
        if len(set(acted)) > 1 and all(
                a in explaining for a, (_, explaining, _) in zip(acted, seen, strict=True)):
            return f"the target stays {distance:+d} from the spec's through {hits} ghost hits"
    if set.intersection(*(explaining for _, explaining, _ in seen)):
        return _STILL
    return None
