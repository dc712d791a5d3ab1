"""Metamorphic relations: faults core can catch without knowing a policy's
order. For a deterministic policy some changes to a call sequence must not
change any result (MUSTs) and some should not (SHOULDs: correct adaptive
designs break them on purpose); each relation's id and level are in the
registry. The engine replays each transformed sequence and compares it with
the original; a difference is reported under the relation's id unless it is
a safety fault of its own, which is reported under the MUST it breaks.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from policyspec.environment import active
from policyspec.harness import Aborted, ConformanceFailure, Lockstep
from policyspec.harness.keymap import KeyMap
from policyspec.harness.sightings import current as current_sightings
from policyspec.harness.watchdog import CallTimeout
from policyspec.harness.watchdog import current as watch
from policyspec.model.actions import Action, expand, is_legal
from policyspec.model.evict import evict_violation
from policyspec.model.state import IDLE, State
from policyspec.model.step import ProfileModel
from policyspec.profiles import get_profile
from policyspec.registry import load_registry
from policyspec.run.context import Engine, EngineContext, capped
from policyspec.run.result import EngineRun, Finding
from policyspec.sources.action_source import ActionSource
from policyspec.sources.clock_steps import with_clock_steps
from policyspec.subject import Subject
from policyspec.vllm.standins.gaps import raise_if_gap
from policyspec.witness.minimise import bounded_witness, renamed, renumbering
from policyspec.witness.render import describe

__all__ = ["RELATIONS", "Relation", "Step", "replay", "run_metamorphic"]

POOL = 48
"""Keys S may insert are 0..POOL-1 (as the policy machine)."""
ABSENT = (POOL + 50, POOL + 51, POOL + 52)
"""Keys no sequence ever inserts (S names at most POOL + 3)."""

_ANY: Any = object()
"""Expectation of an added call whose result is not compared."""

Output = object
"""What one step gave: a get's presence (bool), an evict's victims (tuple of
model keys, or None), ``"raised X"`` / ``"did not return"`` / a malformed
evict result described in words, else None."""


@dataclass(frozen=True)
class Step:
    """One call of a transformed sequence: ``origin`` is the index of the step
    of S it stands for (its result must equal S's), None for an added call,
    whose result must equal ``expect`` unless that is ``_ANY``; ``refs`` is
    the state before an added call (to name the requirement it breaks)."""

    action: Action
    origin: int | None
    expect: Output = _ANY
    refs: Mapping[int, int] | None = None


def _back(keys: KeyMap, real: object) -> int | str:
    """The model key of a real key the policy returned ("?..." if unknown)."""
    k = keys.model(real)
    return f"?{real!r}" if k is None else k


@dataclass
class _Result:
    outputs: list[Output]
    snapshots: list[dict[int, int]]
    """The ref counts after each step (kept only when asked for)."""
    legal: bool
    calls: int


class _Runner:
    """Replays actions on a fresh policy as the manager would: each action's
    calls and writes (``model.actions.expand``) go to the policy and, with
    what it answered, to the core model (``model.step``), which keeps the
    caller contract's state. Nothing is judged here: the outputs are
    compared between sequences."""

    def __init__(self, subject: Subject, capacity: int, keys: KeyMap) -> None:
        self.subject = subject
        self.environment = subject.environment()
        with active(self.environment):
            self.policy = subject.build(capacity)
        self.model = ProfileModel.fresh(None, capacity)
        self.blocks: dict[int, Any] = {}
        self.keys = keys
        self.has_mark = subject.has("mark")
        self.next_id = 0
        self.calls = 0

    @property
    def state(self) -> State:
        return self.model.state

    def step(self, action: Action) -> Output:
        out: Output = None
        for primitive in expand(self.state, action):
            out = self._primitive(primitive)
        return out

    def _call(self, op: str, method: Callable[..., Any], *args: Any) -> tuple[bool, Any]:
        self.calls += 1
        outer = self.environment.enter()
        watch.begin(op)
        try:
            return True, method(*args)
        except CallTimeout:
            return False, "did not return"
        except (Exception, SystemExit) as exc:  # the policy's fault is a result like any other
            raise_if_gap(exc)
            return False, f"raised {type(exc).__name__}"
        finally:
            watch.op = None
            self.environment.leave(outer)

    def _primitive(self, call: Action) -> Output:
        op, real = call[0], self.keys.real
        ok, out = True, None
        observed: object = None
        if op == "set_ref":
            self.blocks[call[1]].ref_cnt = call[2]
        elif op == "insert":
            block = self.subject.make_block(call[2], self.next_id)
            self.next_id += 1
            ok, out = self._call(op, self.policy.insert, real(call[1]), block)
            if ok:
                self.blocks[call[1]] = block
        elif op == "get":
            ok, out = self._call(op, self.policy.get, real(call[1]))
            return (out is not None) if ok else out
        elif op == "evict":
            ok, out = self._call(op, self.policy.evict, call[1], {real(k) for k in call[2]})
            if not ok:
                return out
            out = self._victims(out)
            observed = list(out) if isinstance(out, tuple) else None
        elif op == "touch":
            ok, out = self._call(op, self.policy.touch, [real(k) for k in call[1]])
        elif op == "remove":
            ok, out = self._call(op, self.policy.remove, real(call[1]))
            if ok:
                self.blocks.pop(call[1], None)
        elif op == "clear":
            ok, out = self._call(op, self.policy.clear)
            if ok:
                self.blocks.clear()
        elif op == "clock":
            self.environment.step(call[1])
        elif self.has_mark:  # mark_evictable / mark_non_evictable
            ok, out = self._call(op, getattr(self.policy, op), real(call[1]))
        if ok:
            self._advance(call, observed)
        if op == "evict":
            return out
        return None if ok else out

    def _advance(self, call: Action, observed: object) -> None:
        """Move the model by ``call`` as the policy answered it. An eviction
        whose victims core forbids leaves the model where it was (the
        outputs already differ, which is what the engine looks at)."""
        if call[0] != "evict":
            self.model = self.model.step(call).model
            return
        if observed is not None and not all(isinstance(k, int) for k in observed):  # type: ignore[attr-defined]
            return
        step = self.model.step(call, observed)
        if step.violation in (None, "EVICT-LIVENESS"):
            self.model = step.model
            for k in observed or ():  # type: ignore[attr-defined]
                self.blocks.pop(k, None)

    def _victims(self, result: object) -> Output:
        if result is None:
            return None
        if not isinstance(result, list):
            return f"a {type(result).__name__}, not a list"
        victims: list[int | str] = []
        for item in result:
            if not (isinstance(item, tuple) and len(item) == 2):
                return f"a list holding a {type(item).__name__}, not a (key, block) pair"
            victims.append(_back(self.keys, item[0]))
        return tuple(victims)


def replay(
    subject: Subject,
    capacity: int,
    keys: KeyMap,
    steps: Sequence[Step],
    *,
    baseline: Sequence[Output] | None = None,
    snapshots: bool = False,
) -> _Result:
    """Run ``steps`` on a fresh policy. With ``baseline`` (S's outputs) stop at
    the first step whose result differs from what it must be. A step the
    caller contract forbids ends the run with ``legal=False``."""
    runner = _Runner(subject, capacity, keys)
    outputs: list[Output] = []
    snaps: list[dict[int, int]] = []
    for step in steps:
        if not is_legal(runner.state, step.action):
            return _Result(outputs, snaps, False, runner.calls)
        out = runner.step(step.action)
        outputs.append(out)
        if snapshots:
            snaps.append(dict(runner.state.refs))
        if baseline is not None and _differs(step, out, baseline):
            break
    return _Result(outputs, snaps, True, runner.calls)


def _differs(step: Step, out: Output, baseline: Sequence[Output]) -> bool:
    if step.origin is not None:
        return out != baseline[step.origin]
    return step.expect is not _ANY and out != step.expect


def _plain(sequence: Sequence[Action]) -> list[Step]:
    return [Step(action, index) for index, action in enumerate(sequence)]


# -- the relations ------------------------------------------------------------


@dataclass(frozen=True)
class _Context:
    capacity: int
    prefix: tuple[Action, ...] = ()
    """CLEAR-FRESH's history before the clear."""


Transform = Callable[[Sequence[Action], Sequence[Mapping[int, int]], _Context], list[Step]]


@dataclass(frozen=True)
class Relation:
    """A transformation of S that must leave the results of S's steps alone."""

    requirement: str
    change: str
    """The transformation, for messages ("a get of every present key after each action")."""
    transform: Transform
    needs: str | None = None
    presence: str | None = None
    """The MUST a changed ``get`` answer of S breaks (a key made present or
    absent by the added calls), when ``requirement`` is only a SHOULD."""
    reference: Transform | None = None
    """The run whose results of S's steps the transformed run must give
    (default: S alone on a fresh policy)."""
    compared: str = "the same sequence without that change"
    """The reference run, for messages."""


def _after_each(
    make: Callable[[int, Mapping[int, int], _Context], list[Step]],
) -> Transform:
    def transform(
        sequence: Sequence[Action], snaps: Sequence[Mapping[int, int]], ctx: _Context
    ) -> list[Step]:
        steps: list[Step] = []
        for index, action in enumerate(sequence):
            steps.append(Step(action, index))
            steps.extend(make(index, snaps[index], ctx))
        return steps

    return transform


def _gets(index: int, refs: Mapping[int, int], ctx: _Context) -> list[Step]:
    return [Step(("get", k), None) for k in (*sorted(refs), ABSENT[0])]


def _absent_touches(
    sequence: Sequence[Action], snaps: Sequence[Mapping[int, int]], ctx: _Context
) -> list[Step]:
    """After each action: ``touch([])``, and a touch of the keys never
    inserted so far (since the last clear): ABSENT, and the keys S inserts
    only later (a policy that keeps an entry for them shows once they
    arrive)."""
    later = [a[1] for a in sequence if a[0] == "insert"]
    seen: set[int] = set()
    steps: list[Step] = []
    for index, action in enumerate(sequence):
        steps.append(Step(action, index))
        if action[0] == "clear":
            seen.clear()
        elif action[0] == "insert":
            seen.add(action[1])
        fresh = tuple(dict.fromkeys(k for k in later[:64] if k not in seen))
        steps.append(Step(("touch", ()), None))
        steps.append(Step(("touch", (*fresh[:8], *ABSENT)), None))
    return steps


def _zero_evicts(index: int, refs: Mapping[int, int], ctx: _Context) -> list[Step]:
    some = frozenset(sorted(refs)[:3]) | {ABSENT[0]}
    return [
        Step(("evict", 0, frozenset()), None, (), refs),
        Step(("evict", 0, some), None, (), refs),
    ]


def _failing_evict(index: int, refs: Mapping[int, int], ctx: _Context) -> list[Step]:
    """capacity + 1; and where a key is idle, one more than the eligible
    keys with every other idle key protected (gets past a size shortcut, and
    is a call vLLM's manager makes: n no more than the idle keys). Both after
    every step, not by turns: a step fewer must not change what follows
    (shrinking), and the witness keeps only the calls it needs."""
    steps = [Step(("evict", ctx.capacity + 1, frozenset()), None, None, refs)]
    idle = [k for k, r in refs.items() if r == IDLE]
    if idle:
        protected = frozenset(idle[::2])
        n = len(idle) - len(protected) + 1
        steps.append(Step(("evict", n, protected), None, None, refs))
    return steps


def _protect_absent(
    sequence: Sequence[Action], snaps: Sequence[Mapping[int, int]], ctx: _Context
) -> list[Step]:
    """Each evict also protects the keys never inserted and every key of S
    that is absent at that moment: removed, evicted, or inserted only later
    (a policy that keeps protected keys "reserved" shows once they arrive)."""
    named = frozenset(a[1] for a in sequence if a[0] == "insert") | frozenset(ABSENT)
    steps: list[Step] = []
    for index, a in enumerate(sequence):
        if a[0] == "evict":
            before = snaps[index - 1] if index else {}
            a = ("evict", a[1], a[2] | frozenset(k for k in named if k not in before))
        steps.append(Step(a, index))
    return steps


def _after_clear(
    sequence: Sequence[Action], snaps: Sequence[Mapping[int, int]], ctx: _Context
) -> list[Step]:
    head = [Step(action, None) for action in (*ctx.prefix, ("clear",))]
    return head + _plain(sequence)


RENAMED = 1000
"""CLEAR-FORGETS-KEYS's renamed history uses keys from here on (S and ABSENT
stay below POOL + 60)."""


def _rename(action: Action) -> Action:
    op = action[0]
    if op == "touch":
        return ("touch", tuple(k + RENAMED for k in action[1]))
    if op == "evict":
        return ("evict", action[1], frozenset(k + RENAMED for k in action[2]))
    if op == "clear":
        return action
    return (op, action[1] + RENAMED, *action[2:])


def _after_renamed_clear(
    sequence: Sequence[Action], snaps: Sequence[Mapping[int, int]], ctx: _Context
) -> list[Step]:
    """The same history as ``_after_clear`` with every key renamed to one S
    never names: whatever no key shaped (a generator, a clock) is the same."""
    head = [Step(_rename(action), None) for action in (*ctx.prefix, ("clear",))]
    return head + _plain(sequence)


RELATIONS = (
    Relation(
        "GET-PURE", "a get of every present key after each action", _after_each(_gets),
        presence="GET-KEEPS-MEMBERSHIP",
    ),
    Relation(
        "TOUCH-ABSENT-NEUTRAL",
        f"touch([]) and a touch of keys never inserted so far ({list(ABSENT)} and up to 8 "
        "keys the sequence inserts later) after each action",
        _absent_touches,
        needs="touch",
        presence="TOUCH-KEEPS-MEMBERSHIP",
    ),
    Relation("EVICT-ZERO", "evict(0, ...) after each action", _after_each(_zero_evicts)),
    Relation(
        "EVICT-PROTECTED-ABSENT-NEUTRAL",
        f"every absent key (those of S absent at the time, and {list(ABSENT)}) added to "
        "every protected set",
        _protect_absent,
        presence="EVICT-REMOVES",
    ),
    Relation(
        "EVICT-ATOMIC", "an evict that must fail after each action", _after_each(_failing_evict)
    ),
    Relation(
        "CLEAR-FRESH", "another history and clear() before it", _after_clear, needs="clear",
        presence="CLEAR-EMPTIES",
    ),
    Relation(
        "CLEAR-FORGETS-KEYS", "another history and clear() before it", _after_clear,
        needs="clear", presence="CLEAR-EMPTIES", reference=_after_renamed_clear,
        compared=f"the same history with its keys renamed (k -> k + {RENAMED}) before clear()",
    ),
)


# -- finding and judging a difference -----------------------------------------


@dataclass(frozen=True)
class _Difference:
    requirement: str
    message: str
    trace: tuple[Action, ...]
    needs: int
    """How many steps of S the difference needs (the rest can go)."""
    reference: tuple[Action, ...] | None = None
    """The run the trace's last step is compared with, up to the step it
    must agree with (S, or the relation's reference run); None for an added
    call, whose expected result is fixed."""


class _Judge:
    """Runs one relation on sequences of one subject."""

    def __init__(self, subject: Subject, capacity: int, keys: KeyMap) -> None:
        self.subject = subject
        self.capacity = capacity
        self.keys = keys
        self.calls = 0
        self.steps = 0

    def _replay(self, steps: Sequence[Step], **options: Any) -> _Result:
        result = replay(self.subject, self.capacity, self.keys, steps, **options)
        self.calls += result.calls
        self.steps += len(result.outputs)
        return result

    def baseline(self, sequence: Sequence[Action]) -> _Result:
        return self._replay(_plain(sequence), snapshots=True)

    def difference(
        self, relation: Relation, sequence: Sequence[Action], ctx: _Context,
        base: _Result | None = None, steps: Sequence[Step] | None = None,
    ) -> _Difference | None:
        """The first step whose result the transformation changes, or None.
        ``steps``: the transformed sequence to run instead of the
        relation's own (a thinned one, see ``_thinned``)."""
        if base is None:
            base = self.baseline(sequence)
        if not base.legal:
            return None
        wanted = base.outputs
        compared: list[tuple[Action, int | None]] = [(a, i) for i, a in enumerate(sequence)]
        if relation.reference is not None:
            reference = relation.reference(sequence, base.snapshots, ctx)
            ref = self._replay(reference)
            if not ref.legal:
                return None
            outputs = zip(reference, ref.outputs, strict=True)
            wanted = [o for s, o in outputs if s.origin is not None]
            compared = [(s.action, s.origin) for s in reference]
        if steps is None:
            steps = relation.transform(sequence, base.snapshots, ctx)
        run = self._replay(steps, baseline=wanted)
        if not run.legal or not run.outputs:
            return None
        last = len(run.outputs) - 1
        step, out = steps[last], run.outputs[last]
        if not _differs(step, out, wanted):
            return None
        trace = tuple(s.action for s in steps[: last + 1])
        head = f"with {relation.change}"
        if step.origin is not None:
            expected = wanted[step.origin]
            refs = base.snapshots[step.origin - 1] if step.origin else {}
            return _Difference(
                _origin_requirement(relation, step, out, refs),
                f"{head}, step {last + 1} ({describe(step.action)}{_was(step.origin, last)}) "
                f"gave {_show(step.action, out)}; {relation.compared} gave "
                f"{_show(step.action, expected)}; the spec requires the same result "
                f"({_title(relation.requirement)})",
                trace,
                step.origin + 1,
                _upto(compared, step.origin),
            )
        after = max((s.origin for s in steps[:last] if s.origin is not None), default=-1)
        return _Difference(
            _added_requirement(relation, step, out),
            f"{head}, the call added at step {last + 1} ({describe(step.action)}) gave "
            f"{_show(step.action, out)}; the spec requires {_show(step.action, step.expect)}",
            trace,
            after + 1,
        )


def _title(requirement: str) -> str:
    """The requirement's title, as the registry words it."""
    known = load_registry().get(requirement)
    return known.title if known is not None else requirement


def _upto(run: Sequence[tuple[Action, int | None]], origin: int) -> tuple[Action, ...]:
    """The actions of a compared run up to its step that stands for step
    ``origin`` of S."""
    actions: list[Action] = []
    for action, where in run:
        actions.append(action)
        if where == origin:
            break
    return tuple(actions)


def _was(origin: int, index: int) -> str:
    """Where a step of the printed trace (``index``, from 0) was in the
    sequence before the change, when that differs."""
    return "" if origin == index else f"; step {origin + 1} before the change"


def _origin_requirement(
    relation: Relation, step: Step, out: Output, refs: Mapping[int, int]
) -> str:
    """A step of S gave another result than in the reference run: the
    relation's id, unless the result is a fault of its own. ``refs``: the
    state before the step, the same in both runs since every earlier
    result agreed. A SHOULD relation never hides a MUST."""
    if isinstance(out, str):  # raised, hung, or a malformed evict result
        if out.startswith("raised") and step.action[0] == "touch":
            return "TOUCH-TOTAL"
        return _added_requirement(relation, step, out)
    action = step.action
    if action[0] == "get":
        return relation.presence or relation.requirement
    if action[0] == "evict" and (out is None or isinstance(out, tuple)):
        victims = None if out is None else [k for k in out if isinstance(k, int)]
        if isinstance(out, tuple) and victims is not None and len(victims) != len(out):
            return "EVICT-IDLE-ONLY"  # a key never handed out
        state = State(dict(refs), [k for k, r in refs.items() if r == IDLE])
        violation = evict_violation(state, action[1], action[2], victims)
        if violation is not None and violation != "EVICT-LIVENESS":
            return violation
    return relation.requirement


def _added_requirement(relation: Relation, step: Step, out: Output) -> str:
    """An added call with a fixed expected result broke it: name what."""
    if out == "did not return":
        return "API-RETURNS"
    if isinstance(out, str):  # "raised X", or a malformed evict result
        return "API-NO-RAISE" if out.startswith("raised") else "EVICT-SHAPE"
    action = step.action
    if action[0] == "evict" and step.refs is not None and (out is None or isinstance(out, tuple)):
        refs = dict(step.refs)
        state = State(refs, [k for k, r in refs.items() if r == IDLE])
        victims = None if out is None else [k for k in out if isinstance(k, int)]
        violation = evict_violation(state, action[1], action[2], victims)
        if violation is not None and violation != "EVICT-LIVENESS":
            return violation
    return relation.requirement


def _show(action: Action, out: Output) -> str:
    if action[0] == "get" and isinstance(out, bool):
        return "present" if out else "None (absent)"
    if isinstance(out, tuple):
        return "[" + ", ".join(str(k) for k in out) + "]"
    return str(out)


# -- the engine -----------------------------------------------------------------


def _generate(
    subject: Subject, capacity: int, rng: random.Random, length: int, run: EngineRun
) -> tuple[tuple[Action, ...], bool]:
    """A legal sequence for this very policy: ActionSource on a lockstep
    harness (core, no presence sweep), cut before a policy-level failure
    (the other engines report those). The flag says a call did not return:
    then every further replay would wait out the call limit."""
    harness = Lockstep(subject, get_profile("core"), capacity, observe=False)
    source = ActionSource(rng, pool=POOL, capacity=capacity, with_clear=subject.has("clear"),
                          with_touch=subject.has("touch"))
    draw = with_clock_steps(source.next, harness.environment, rng)
    try:
        for _ in range(length):
            harness.apply(draw(harness.state))
    except (ConformanceFailure, Aborted) as exc:
        failure = exc.failure if isinstance(exc, Aborted) else exc
        note = f"sequence generation stopped at a policy-level failure ({failure.requirement})"
        if note not in run.notes:
            run.notes.append(note)
        run.calls += harness.calls
        return tuple(harness.trace[:-1]), isinstance(exc, Aborted)
    run.calls += harness.calls
    return tuple(harness.trace), False


def run_metamorphic(
    context: EngineContext, *, lengths: Sequence[int] = (50, 200, 600)
) -> EngineRun:
    """The metamorphic engine: RATE sequences S per work unit
    (``context.examples``). The relations belong to core, so the profile
    does not change what runs. (``ctx`` below is a relation's context.)"""
    subject, capacity, seed, cap = context.subject, context.capacity, context.seed, context.cap
    run = EngineRun(engine="metamorphic")
    run.planned = planned = context.examples(RATE)
    started = time.monotonic()
    keys = KeyMap(subject.make_key)
    judge = _Judge(subject, capacity, keys)
    relations = [r for r in RELATIONS if r.needs is None or subject.has(r.needs)]
    pending = list(relations)
    index = 0
    while pending and index < planned:
        if context.capped():
            run.capped = True
            break
        rng = random.Random(f"metamorphic:{seed}:{index}")
        length = lengths[index % len(lengths)]
        sequence, hung = _generate(subject, capacity, rng, length, run)
        if hung:
            run.notes.append("stopped: a policy call did not return (API-RETURNS)")
            break
        base = judge.baseline(sequence)
        again = judge.baseline(sequence)
        if not (base.legal and again.legal and base.outputs == again.outputs):
            reason = (
                "the policy is not deterministic: the same call sequence on two fresh "
                "instances gave different results, so results cannot be compared across "
                "transformed sequences"
            )
            run.not_applicable.update({r.requirement: reason for r in relations})
            run.findings.clear()  # never a failure on a non-deterministic policy
            run.notes.append(reason)
            break
        run.examples += 1
        prefix_rng = random.Random(f"metamorphic-prefix:{seed}:{index}")
        prefix, hung = _generate(subject, capacity, prefix_rng, length, run)
        ctx = _Context(capacity, prefix)
        for relation in list(pending):
            run.checked[relation.requirement] += 1
            difference = judge.difference(relation, sequence, ctx, base)
            if difference is not None:
                current_sightings().saw(difference.requirement, run.calls + judge.calls)
                finding = _minimal(judge, relation, sequence, ctx, difference, cap)
                if finding is not None:
                    run.add(finding)
                    pending.remove(relation)
                    hung = hung or "did not return" in finding.message
        if hung:
            run.notes.append("stopped: a policy call did not return (API-RETURNS)")
            break
        index += 1
        if current_sightings().stopped():
            break
    run.calls += judge.calls
    run.steps += judge.steps
    current_sightings().calls += run.calls
    run.seconds = time.monotonic() - started
    return run


def _minimal(
    judge: _Judge, relation: Relation, sequence: Sequence[Action], ctx: _Context,
    first: _Difference, cap: float | None,
) -> Finding | None:
    """Shrink S with the shared minimiser (``witness.minimise``: no step and
    no key that can go, a sequence vLLM's manager could make where there is
    one), CLEAR-FRESH's prefix too, then the added calls of the transformed
    sequence (``_thinned``), then rename the keys 0, 1, 2, ...; at most
    MINIMISE_TRIES replays (and the wall-time ``cap``); confirm the result
    twice before reporting it."""
    rid = first.requirement
    if "did not return" in first.message:  # every replay would wait out the limit
        return Finding(rid, first.message, first.trace, "metamorphic", shrunk=True)
    def breaks(candidate: Sequence[Action], context: _Context) -> bool:
        if capped(cap):
            return False  # keep the best so far
        found = judge.difference(relation, candidate, context)
        return found is not None and found.requirement == rid

    if ctx.prefix:  # a short history first: every later replay gets cheaper
        short = sequence[: first.needs]
        ctx = _Context(
            ctx.capacity,
            _shortest_prefix(ctx.prefix, lambda p: breaks(short, _Context(ctx.capacity, p))),
        )
    context = ctx
    best, _ = bounded_witness(sequence[: first.needs], lambda c: breaks(c, context),
                              lambda c: breaks(c, context), MINIMISE_TRIES)
    if ctx.prefix:
        prefix, _ = bounded_witness(
            ctx.prefix, lambda p: breaks(best, _Context(ctx.capacity, tuple(p))),
            lambda p: breaks(best, _Context(ctx.capacity, tuple(p))), MINIMISE_TRIES // 3)
        ctx = _Context(ctx.capacity, tuple(prefix))
    steps = _thinned(judge, relation, best, ctx, rid, cap)
    best, ctx, steps = _renumbered(judge, relation, best, ctx, steps, rid)
    found = [judge.difference(relation, best, ctx, steps=steps) for _ in range(2)]
    if any(f is None or f.requirement != rid for f in found) or found[0] != found[1]:
        return None
    final = found[0]
    assert final is not None
    # Only the relation's own id needs the second run: a safety fault the
    # difference turned out to be shows on the trace alone.
    return Finding(rid, final.message, final.trace, "metamorphic", shrunk=True,
                   reference=final.reference if rid == relation.requirement else None)


MINIMISE_TRIES = 1500
"""Candidate sequences the engine's minimising of one difference may try
(a count, so that the same seed gives the same witness on any machine)."""

RATE = 21.0
"""Sequences S per work unit (run.budget): calibrated in
benchmarks/results.txt, budgets."""


def _thinned(
    judge: _Judge, relation: Relation, sequence: Sequence[Action], ctx: _Context, rid: str,
    cap: float | None,
) -> tuple[Step, ...] | None:
    """The relation's transformed sequence for ``sequence`` without the
    added calls and the added protected keys the difference does not need
    (an evict that must fail after each action, where one after the third
    shows it). None where the relation compares with a reference run of its
    own (that run is made from the same added history: both would have to
    change together), or nothing can go."""
    if relation.reference is not None:
        return None
    base = judge.baseline(sequence)
    if not base.legal:
        return None
    steps = tuple(relation.transform(sequence, base.snapshots, ctx))
    original = steps

    def same(candidate: tuple[Step, ...]) -> bool:
        if capped(cap):
            return False
        found = judge.difference(relation, sequence, ctx, base, candidate)
        return found is not None and found.requirement == rid

    index = 0
    while index < len(steps):
        step = steps[index]
        if step.origin is None and step.action[0] != "clear":  # CLEAR-FRESH's is the change
            candidate = (*steps[:index], *steps[index + 1:])
            if same(candidate):
                steps = candidate
                continue
        if step.action[0] == "evict" and step.origin is not None:
            # (An added call's expected result holds for its own arguments.)
            for k in sorted(step.action[2] - sequence[step.origin][2]):
                action = ("evict", step.action[1], steps[index].action[2] - {k})
                candidate = (*steps[:index], replace(steps[index], action=action),
                             *steps[index + 1:])
                if same(candidate):
                    steps = candidate
        index += 1
    return None if steps == original else steps


def _renumbered(
    judge: _Judge, relation: Relation, sequence: Sequence[Action], ctx: _Context,
    steps: tuple[Step, ...] | None, rid: str,
) -> tuple[tuple[Action, ...], _Context, tuple[Step, ...] | None]:
    """S, the context and the thinned steps with their keys renamed 0, 1,
    2, ... in order of appearance in the printed sequence, when the same
    difference shows (a policy may look at key values); else as they were."""
    shown = [s.action for s in steps] if steps is not None else [*ctx.prefix, *sequence]
    name = renumbering(shown)
    small = tuple(renamed(a, name) for a in sequence)
    small_ctx = _Context(ctx.capacity, tuple(renamed(a, name) for a in ctx.prefix))
    small_steps = None if steps is None else tuple(
        replace(s, action=renamed(s.action, name),
                refs=None if s.refs is None else {name(k): r for k, r in s.refs.items()})
        for s in steps)
    if (small, small_ctx.prefix, small_steps) == (tuple(sequence), ctx.prefix, steps):
        return tuple(sequence), ctx, steps
    found = judge.difference(relation, small, small_ctx, steps=small_steps)
    if found is not None and found.requirement == rid:
        return small, small_ctx, small_steps
    return tuple(sequence), ctx, steps


def _shortest_prefix(
    prefix: tuple[Action, ...], fails: Callable[[tuple[Action, ...]], bool]
) -> tuple[Action, ...]:
    """The shortest head of ``prefix`` (none, 1, 2, 4, ... actions) that still
    fails; ``prefix`` itself when none does."""
    size = 0
    while size < len(prefix):
        if fails(prefix[:size]):
            return prefix[:size]
        size = max(1, size * 2)
    return prefix


ENGINES = (Engine("metamorphic", run_metamorphic, 0.2, parts=2),)
