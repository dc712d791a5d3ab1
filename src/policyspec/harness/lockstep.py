"""The lockstep harness: one policy and its profile's model, side by side.

The harness plays vLLM's manager: it owns the block objects, writes
``ref_cnt`` as the manager does, and only makes calls the caller contract
allows (the model's predicates decide). Every call goes to the policy and,
with what the policy answered, to the model (``model.step``): the model
says what the spec allows and which requirements the call showed. After
every call the harness also compares what only it can see (block fields,
presence through ``get``, the argument containers) and raises a
``ConformanceFailure`` naming the requirement broken.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from policyspec.environment import active
from policyspec.harness.display import keys_text, set_text
from policyspec.harness.failures import (
    COSTLY,
    Aborted,
    CallerContractError,
    ConformanceFailure,
    ProcessDied,
    failure_type,
)
from policyspec.harness.keymap import KeyMap
from policyspec.harness.second_thread import on_second_thread
from policyspec.harness.shapes import keys_shape, passed, set_shape
from policyspec.harness.sightings import current as sightings_now
from policyspec.harness.watchdog import CallTimeout
from policyspec.harness.watchdog import current as _watch
from policyspec.model.actions import Action, Primitive, expand
from policyspec.model.state import State
from policyspec.model.step import PRESENCE_REQUIREMENT, ProfileModel
from policyspec.profiles import Profile
from policyspec.protocols import observation_hooks
from policyspec.registry import load_registry
from policyspec.subject import Subject
from policyspec.vllm.standins.gaps import raise_if_gap

__all__ = ["STEP_BACK", "THREAD_EVERY", "Lockstep", "block_id_of", "unobservable",
           "unseen_in_process"]

THREAD_EVERY = 8
"""One action in this many runs on the second thread (API-ANY-THREAD). A
policy with state per thread shows it as soon as state one thread wrote is
read on the other, which a run of seven actions on one thread and one on
the other does as well as alternating; each hand-over costs a thread wake-up
(benchmarks/results.txt, second thread), which alternating paid on half of
all actions."""


def unseen_in_process(subject: Subject) -> dict[str, str]:
    """Requirements a run in the checker's own process cannot observe at
    all, with the reason: the user chose the mode, so the verdict does not
    count them as unjudged (policyspec.reports.verdict)."""
    if subject.in_child:
        return {}
    return {"API-PROCESS-ALIVE": (
        "the policy ran in the checker's own process, where a crash would end the "
        "check; run policyspec check --isolate to cover it"
    )}


def unobservable(subject: Subject) -> dict[str, str]:
    """Requirements no call on ``subject`` can show, with the reason and
    how to cover them: the report gives them as NOT TESTED with that text
    (the step back of the wall clock: when no check saw it read)."""
    out = unseen_in_process(subject)
    out[STEP_BACK] = ("the policy did not read the wall clock after it stepped back (the "
                      "engines step the clock only for a policy that reads one)")
    if subject.in_child and not subject.has("isolated"):
        out["API-ARGS-UNCHANGED"] = (
            "the policy runs in another process that does not report whether it changed "
            "the keys or protected it was given (spec/protocol.md, field args)"
        )
    return out


class Lockstep:
    """Drives ``subject`` and its profile's model through caller actions.

    ``observe`` (default on) checks the presence of every key seen so far
    through ``get`` after each call; engines that need raw speed turn it off
    and rely on the other checks. ``fatal`` decides which requirement
    failures raise at once; the others (SHOULD-level by default) are
    recorded in ``soft`` and the run goes on.
    """

    def __init__(
        self,
        subject: Subject,
        profile: Profile,
        capacity: int,
        *,
        observe: bool = True,
        fatal: Callable[[str], bool] | None = None,
        threads: bool | None = None,
    ) -> None:
        # A policy that fits two revisions is driven as the profile's
        # (run_check does the same for every engine).
        subject = subject.fitted(profile.api)
        self.subject = subject
        self.profile = profile
        self.capacity = capacity
        self.observe = observe
        registry = load_registry()
        self.fatal = fatal or (lambda rid: registry[rid].level == "MUST")
        self.model: ProfileModel = profile.model(capacity)
        self.environment = subject.environment()
        """The policy's clock and random stream (policyspec.environment),
        in place during every policy call; clock steps move it."""
        with active(self.environment):
            self.policy = subject.build(capacity)
        self.muted = False
        """Set once the policy broke on a step back of the wall clock
        (STEP_BACK): the instance is no longer judged (``_fail``)."""
        self.has_mark = subject.has("mark")
        self.has_clear = subject.has("clear")
        self.in_child = subject.in_child
        self.keys = KeyMap(subject.make_key)
        self.blocks: dict[int, Any] = {}
        self.written: dict[int, tuple[int, int]] = {}
        self.inserted_at: dict[int, int] = {}
        """The trace step (1-based) that inserted each present key last."""
        self.known: set[int] = set()
        self.trace: list[Action] = []
        self.soft: list[ConformanceFailure] = []
        self.checked: Counter[str] = Counter()
        self.calls = 0
        self._next_block_id = 0
        self.allocator: Callable[[int], int] | None = None
        """Where insert takes a new block's id (called with the model key);
        None numbers blocks 0, 1, 2, ... The manager engine plugs its id pool
        in here, so that ids are handed out as vLLM's manager does (C1)."""
        self.last_evict: object = None
        """The policy's raw answer to the last evict call, before any check
        (None also when the call raised): the manager engine frees ids from
        it as vLLM's manager would, whatever the checks made of it."""
        self._given: deque[tuple[str, Any, Any]] = deque(maxlen=16)
        self.contexts: dict[int, Any] = {}
        """The ``ReqContext`` of each model request (made once, kept across
        clears as vLLM's request contexts are)."""
        self.threads = subject.has("hooks") if threads is None else threads
        """One action in ``THREAD_EVERY`` runs on a second thread
        (serialized), as 0.33's poll thread calls a policy: on by default
        where the revision has the request hooks."""
        self._actions = 0
        self.sightings = sightings_now()
        self.observed = frozenset(observation_hooks(subject.api))
        """The subject's observation hooks (``protocols.observation_hooks``):
        a raise in one breaks HOOK-TOTAL, as in the request hooks."""

    # -- the model ----------------------------------------------------------

    @property
    def state(self) -> State:
        """The core model state (present keys, ref counts, idle keys)."""
        return self.model.state

    @property
    def ext(self) -> Any:
        """The refinement's state (None under core)."""
        return self.model.ext

    # -- keys ---------------------------------------------------------------

    def key(self, k: int) -> Hashable:
        """The real key for model key ``k`` (made once, then reused)."""
        return self.keys.real(k)

    def model_key(self, real: object) -> int | None:
        """The model key of a real key, or None for a key never handed out."""
        return self.keys.model(real)

    # -- driving ------------------------------------------------------------

    def apply(self, action: Action) -> object:
        """Run one caller action on policy and model; return the policy's
        result of its last call (the victims for evict, the block for get)."""
        if not self.model.allows(action):
            raise CallerContractError(f"illegal action {action!r} in state {self.state!r}")
        self.trace.append(action)
        self._actions += 1
        # The policy's clock and random stream for every call the action
        # makes (its calls, then get of every key seen: once, not per call).
        environment = self.environment
        outer = environment.enter()
        try:
            if self.threads and self._actions % THREAD_EVERY == 0:
                self.checked["API-ANY-THREAD"] += 1
                return self._on_worker(action)
            return self._expanded(action)
        finally:
            environment.leave(outer)

    def _expanded(self, action: Action) -> object:
        result: object = None
        for primitive in expand(self.state, action):
            result = self._primitive(primitive)
        return result

    def _on_worker(self, action: Action) -> object:
        """``_expanded`` on the second thread; its failures are raised here.
        A call that never returns there ends the run (API-RETURNS)."""
        try:
            return on_second_thread(lambda: self._expanded(action))
        except CallTimeout:
            _watch.op = None
            self._fail("API-RETURNS", f"{action[0]}{action[1:]!r} did not return within the "
                       "call time limit (on the manager's second thread)")
            return None

    def run(self, actions: Iterable[Action]) -> None:
        for action in actions:
            self.apply(action)

    def _fail(self, requirement: str, message: str, answered: tuple[int, ...] = ()) -> None:
        if self.muted:
            return
        if self.environment.read_wall_after_back and requirement not in COSTLY:
            requirement, message = self._step_back_cause(requirement, message)
        self.sightings.saw(requirement, self.calls)
        failure = failure_type(requirement)(requirement, message, tuple(self.trace), answered)
        if self.fatal(requirement):
            if requirement in COSTLY:
                raise Aborted(failure)  # each replay would hang or kill again
            raise failure
        if all(f.requirement != requirement for f in self.soft):
            self.soft.append(failure)

    def _step_back_cause(self, requirement: str, message: str) -> tuple[str, str]:
        """``requirement`` and ``message``, or STEP_BACK when the same calls
        with every step back of the wall clock left out do not break
        ``requirement`` (the clocks are the same up to the first step back,
        so the step back made the difference). After such a failure the
        instance is muted: what it does next is no evidence of anything."""
        steady = [a for a in self.trace if not (a[0] == "clock" and a[1] < 0)]
        replay = Lockstep(self.subject, self.profile, self.capacity, observe=self.observe,
                          fatal=requirement.__eq__, threads=self.threads)
        # A child process hosts one policy: the replay's replaced this one.
        self.muted = self.in_child
        try:
            replay.run(steady)
        except ConformanceFailure as failure:
            if failure.requirement == requirement:
                return requirement, message
        except (Aborted, CallerContractError):
            pass
        else:
            if any(f.requirement == requirement for f in replay.soft):
                return requirement, message
        back = next(i for i, a in enumerate(self.trace, 1) if a[0] == "clock" and a[1] < 0)
        self.muted = self.in_child or not self.fatal(STEP_BACK)
        return STEP_BACK, (
            f"after the wall clock stepped back at step {back}: {message} ({requirement}); "
            "the same calls with a wall clock that never steps back do not break it")

    def _step(self, call: Primitive, observed: object = None) -> None:
        """Move the model; count what the call showed; a violation fails."""
        step = self.model.step(call, observed) if call[0] == "evict" else self.model.step(call)
        self.checked.update(step.exercised)
        if step.violation is not None:
            n, protected = call[1], call[2]
            self._fail(step.violation, _evict_message(
                step.violation, self.profile.name, n, protected, observed, step.expected,
                self.state,
            ), tuple(observed) if isinstance(observed, list | tuple) else ())
            # (raises when the requirement is fatal)
            if step.violation != "EVICT-LIVENESS":
                raise _Stop  # a soft failure the model cannot follow
        self.model = step.model

    def _call(self, op: str, method: Callable[..., Any], *args: Any) -> Any:
        self.calls += 1
        self.checked["API-NO-RAISE"] += 1
        self.checked["API-RETURNS"] += 1
        if self.in_child:
            self.checked["API-PROCESS-ALIVE"] += 1
        watch = _watch
        watch.begin(op)
        try:
            return method(*args)
        except CallTimeout:
            watch.op = None
            self._fail(
                "API-RETURNS",
                f"{op}({self._args(args)}) did not return within the call time limit; the "
                "spec requires every call to return",
            )
            raise _Stop from None
        except (ProcessDied, MemoryError) as exc:
            what = "ran out of memory" if isinstance(exc, MemoryError) else "ended"
            self._fail(
                "API-PROCESS-ALIVE",
                f"the policy's process {what} during {op}({self._args(args)}): {exc}; the "
                "spec requires the policy never to end or crash the process",
            )
            raise _Stop from None
        except (KeyboardInterrupt, ConformanceFailure):
            raise
        except (Exception, SystemExit) as exc:  # the policy's own fault becomes a verdict
            raise_if_gap(exc, str(op))
            self._fail(
                _TOTAL.get(op) or ("HOOK-TOTAL" if op in self.observed else "API-NO-RAISE"),
                f"{op}({self._args(args)}) raised {type(exc).__name__}: "
                f"{self._exception_text(exc)}; the call meets the caller contract, so the "
                "spec requires it to return normally",
            )
            raise _Stop from exc
        finally:
            watch.op = None

    def _exception_text(self, exc: BaseException) -> str:
        """The exception's text, a real key in it shown as the trace's key
        number (a KeyError carries the key itself, other errors spell it)."""
        if len(exc.args) == 1 and self.keys.model(exc.args[0]) is not None:
            return self.keys.show(exc.args[0])
        return self.keys.text(str(exc))

    def _args(self, args: tuple[Any, ...]) -> str:
        return ", ".join(self.keys.show(a) for a in args)

    def _primitive(self, call: Primitive) -> object:
        op = call[0]
        try:
            result: object = _HANDLERS[op](self, *call[1:])
        except _Stop:
            return None
        called = call[1] if op == "hook" else op  # an observation hook by its name
        self._check_blocks(called)
        self._check_arguments()
        if self.observe:
            requirement: str | None = PRESENCE_REQUIREMENT.get(op, "GET-KEEPS-MEMBERSHIP")
            if op == "evict" and result is None:
                requirement = "EVICT-ATOMIC"
            elif op == "clock":
                requirement = None  # time passing changes no key's presence
            self._check_presence(called, requirement)
        if self.environment.read_wall_after_back:
            self.checked[STEP_BACK] += 1
        return result

    # -- one method per call ---------------------------------------------------

    def _set_ref(self, k: int, ref: int) -> None:
        self.blocks[k].ref_cnt = ref
        self.written[k] = (ref, self.written[k][1])
        self._step(("set_ref", k, ref))

    def _insert(self, k: int, ref: int, r: int | None = None) -> None:
        if self.allocator is None:
            block_id = self._next_block_id
            self._next_block_id += 1
        else:
            block_id = self.allocator(k)
        block = self.subject.make_block(ref, block_id)
        self.known.add(k)
        if r is None:
            self._call("insert", self.policy.insert, self.key(k), block)
            self._step(("insert", k, ref))
        else:
            self._call("insert", self.policy.insert, self.key(k), block, self.context(r))
            self._step(("insert", k, ref, r))
        self.blocks[k] = block
        self.written[k] = (ref, block_id)
        self.inserted_at[k] = len(self.trace)

    def _remove(self, k: int) -> None:
        self._call("remove", self.policy.remove, self.key(k))
        self._step(("remove", k))
        self._forget(k)

    def _touch(self, keys: tuple[int, ...]) -> None:
        self.known.update(keys)
        given = passed(keys_shape("touch", keys), [self.key(k) for k in keys])
        original = _copy(given)
        self._call("touch", self.policy.touch, given)
        if original is not None:
            self._keep_given("touch", given, original)
        self.checked["TOUCH-TOTAL"] += 1
        self._step(("touch", keys))

    def _clock(self, ms: int) -> None:
        """A clock step (policyspec.environment): no call, and the model
        does not move (no requirement of the spec depends on time)."""
        self.environment.step(ms)

    def _mark_evictable(self, k: int) -> None:
        if self.has_mark:
            self._call("mark_evictable", self.policy.mark_evictable, self.key(k))
        self._step(("mark_evictable", k))

    def _mark_non_evictable(self, k: int) -> None:
        if self.has_mark:
            self._call("mark_non_evictable", self.policy.mark_non_evictable, self.key(k))
        self._step(("mark_non_evictable", k))

    # -- the request level (spec/request.md) -----------------------------------

    def context(self, r: int) -> Any:
        """The real ``ReqContext`` of model request ``r``."""
        ctx = self.contexts.get(r)
        if ctx is None:
            make = self.subject.make_request
            if make is None:
                raise CallerContractError("a request call on a policy without request hooks")
            ctx = self.contexts[r] = make(f"policyspec-req-{r}")
        return ctx

    def _set_positions(self, r: int, placed: tuple[tuple[int, int], ...]) -> None:
        ctx = self.context(r)
        for k, position in placed:
            ctx.set_offload_key_position(self.key(k), position)
        self._step(("set_positions", r, placed))

    def _on_store_miss(self, r: int, keys: tuple[int, ...]) -> None:
        self.known.update(keys)
        given = passed(keys_shape("on_store_miss", keys), [self.key(k) for k in keys])
        self._call("on_store_miss", self.policy.on_store_miss,  # type: ignore[attr-defined]
                   given, self.context(r))
        self.checked["HOOK-TOTAL"] += 1
        self._step(("on_store_miss", r, keys))

    def _on_request_access(self, r: int, keys: tuple[int, ...]) -> None:
        self.known.update(keys)
        given = passed(keys_shape("on_request_access", keys), [self.key(k) for k in keys])
        self._call("on_request_access", self.policy.on_request_access,  # type: ignore[attr-defined]
                   given, self.context(r))
        self.checked["HOOK-TOTAL"] += 1
        self._step(("on_request_access", r, keys))

    def _hook(self, name: str, r: int, keys: tuple[int, ...]) -> None:
        """An observation hook a later release adds (``("hook", name, r,
        keys)``): ``policy.<name>(keys, req_context)``, judged as
        ``on_request_access`` is (HOOK-TOTAL, HOOK-KEEPS-MEMBERSHIP)."""
        self.known.update(keys)
        given = passed(keys_shape("hook", keys), [self.key(k) for k in keys])
        self._call(name, getattr(self.policy, name), given, self.context(r))
        self.checked["HOOK-TOTAL"] += 1
        self._step(("hook", name, r, keys))

    def _on_request_finished(
        self, r: int, groups: tuple[tuple[int, ...], ...], insertion_only: frozenset[int],
        reused: frozenset[int],
    ) -> None:
        real_groups = tuple(tuple(self.key(k) for k in group) for group in groups)
        only_shape = set_shape("insertion_only", insertion_only)
        reused_shape = set_shape("reused", reused)
        self._call("on_request_finished", self.policy.on_request_finished,  # type: ignore[attr-defined]
                   real_groups, passed(only_shape, [self.key(k) for k in insertion_only]),
                   passed(reused_shape, [self.key(k) for k in reused]), self.context(r))
        self.checked["HOOK-TOTAL"] += 1
        self._step(("on_request_finished", r, groups, insertion_only, reused))

    def _get(self, k: int) -> object:
        self.known.add(k)
        got = self._call("get", self.policy.get, self.key(k))
        self._check_get(k, got, "get")
        self._step(("get", k))  # an exact profile judges what a get leaves
        return got

    def _clear(self) -> None:
        if not self.has_clear:
            raise CallerContractError("clear() on a policy without clear")
        self._call("clear", self.policy.clear)
        self._step(("clear",))
        for k in list(self.blocks):
            self._forget(k)

    def _evict(self, n: int, protected: frozenset[int]) -> object:
        self.known.update(protected)
        real_protected = passed(set_shape("evict", protected), [self.key(k) for k in protected])
        original = _copy(real_protected)
        self.last_evict = None
        result = self._call("evict", self.policy.evict, n, real_protected)
        self.last_evict = result
        if original is not None:
            self._keep_given("evict", real_protected, original)
        victims = self._victims(n, protected, result)
        self._step(("evict", n, protected), victims)
        if victims is not None:
            for k in victims:
                self._check_block(k, "evict")  # a victim's block is the manager's too
                self._forget(k)
        return result

    def probe_evict(self, n: int) -> list[int | None] | None:
        """``evict(n, {})`` on the policy alone, the model left as it is: a
        probe of which keys the policy can take (findings.finish). The model
        keys of its victims (None for a key never handed out), or None when
        it refuses."""
        with active(self.environment):
            result = self._call("evict", self.policy.evict, n,
                                passed(set_shape("evict", frozenset()), []))
        if not isinstance(result, list):
            return None
        return [self.model_key(victim[0]) for victim in result]

    def _victims(self, n: int, protected: frozenset[int], result: object) -> list[int] | None:
        """The model keys of evict's result, after checking its shape and
        that each block is the very object inserted."""
        call = f"evict({n}, {_show_keys(protected)})"
        self.checked["EVICT-SHAPE"] += 1
        if result is None:
            return None
        if not isinstance(result, list):
            self._fail(
                "EVICT-SHAPE",
                f"{call} returned a {type(result).__name__}; the spec requires None or a "
                "list of (key, block) pairs",
            )
            raise _Stop
        victims: list[int] = []
        for item in result:
            if not (isinstance(item, tuple) and len(item) == 2):
                self._fail(
                    "EVICT-SHAPE",
                    f"{call} returned an item {item!r}; the spec requires (key, block) pairs",
                )
                raise _Stop
            real, block = item
            k = self.model_key(real)
            if k is None or k not in self.state.refs:
                self._fail(
                    "EVICT-IDLE-ONLY",
                    f"{call} returned key {self.keys.show(real)}, which is not present; the "
                    "spec requires idle present keys only",
                )
                raise _Stop
            if block is not self.blocks[k]:
                self._fail(
                    "EVICT-IDENTITY",
                    f"{call} returned for key {k} {self._other_block(k, block)}; the spec "
                    "requires the identical object",
                )
                raise _Stop
            self.checked["EVICT-IDENTITY"] += 1
            victims.append(k)
        return victims

    # -- observation ----------------------------------------------------------

    def _keep_given(self, op: str, given: Any, original: Any) -> None:
        """Remember the last few argument containers handed to the policy,
        with the copy taken before the call, so ``_check_arguments`` can tell
        whether the policy changed one, now or later through a reference it
        kept. A policy in another process gets its own copies; whether it
        changed them is its server's report (``Subject.argument_report``)."""
        if self.subject.argument_report is None:
            self._given.append((op, given, original))

    def _check_arguments(self) -> None:
        """API-ARGS-UNCHANGED after every call: the containers kept by
        ``_keep_given`` (in process), or the child's own comparison."""
        report = self.subject.argument_report
        if report is not None:
            changed = report()
            if changed is None:
                return  # the child compared nothing (or does not report)
            self.checked["API-ARGS-UNCHANGED"] += 1
            if changed:
                self._fail("API-ARGS-UNCHANGED", f"{changed}; the spec forbids mutating it")
            return
        if not self._given:
            return
        self.checked["API-ARGS-UNCHANGED"] += 1
        for name, container, original in self._given:
            if container != original:
                self._given.clear()
                what = "keys list" if name == "touch" else "protected set"
                self._fail(
                    "API-ARGS-UNCHANGED",
                    f"the {what} given to {name} was changed by the policy (now "
                    f"{len(container)} items, was {len(original)}); the spec forbids mutating it",
                )
                return

    def _forget(self, k: int) -> None:
        self.blocks.pop(k, None)
        self.written.pop(k, None)
        self.inserted_at.pop(k, None)

    def _check_blocks(self, op: str) -> None:
        if not self.blocks:
            return
        self.checked["BLOCK-NO-WRITE"] += 1
        written = self.written
        for k, block in self.blocks.items():  # inline: this runs after every call
            ref, block_id = written[k]
            if block.ref_cnt != ref or block.block_id != block_id:
                self._check_block(k, op)

    def _check_block(self, k: int, op: str) -> None:
        block = self.blocks[k]
        ref, block_id = self.written[k]
        if block.ref_cnt != ref or block.block_id != block_id:
            self._fail(
                "BLOCK-NO-WRITE",
                f"after {op}, the block of key {k} reads ref_cnt={block.ref_cnt}, "
                f"block_id={block.block_id}; the manager wrote ref_cnt={ref}, "
                f"block_id={block_id} and the spec forbids the policy to write either",
            )
            block.ref_cnt, block.block_id = ref, block_id

    def _check_presence(self, op: str, requirement: str | None) -> None:
        """Ask get for every key seen so far; a wrong answer right after
        ``op`` breaks ``requirement`` (the contract of ``op``; None: get's
        own GET-IDENTITY and GET-ABSENT)."""
        if not self.known:
            return
        if requirement is not None:
            self.checked[requirement] += 1
        # Inline, as _check_blocks: this runs after every call, for every key
        # seen, so a long witness costs steps times keys. A right answer is
        # only counted here (what _check_get counts); a wrong one goes there.
        get, real, blocks, refs = self.policy.get, self.keys.real, self.blocks, self.state.refs
        present = absent = 0
        try:
            for k in sorted(self.known):
                got = self._call("get", get, real(k))
                if k in refs:
                    if got is blocks[k]:
                        present += 1
                        continue
                elif got is None:
                    absent += 1
                    continue
                self._check_get(k, got, op, requirement)
        finally:
            if present:
                self.checked["GET-IDENTITY"] += present
            if absent:
                self.checked["GET-ABSENT"] += absent

    def _other_block(self, k: int, got: object) -> str:
        """``got``, which is not the block of key ``k``, as a user can place
        it: its block id and ref_cnt when it has them (a copy shows the
        same id), and the step of the trace that inserted the real one."""
        real = self.blocks[k]
        ident = block_id_of(got)
        shown = (f"another object with block id {ident} and ref_cnt "
                 f"{getattr(got, 'ref_cnt', '?')}" if ident is not None
                 else f"another object, {type(got).__name__}")
        if ident is not None and ident == block_id_of(real):
            shown += " (a copy)"
        step = self.inserted_at.get(k)
        where = f" at step {step}" if step else ""
        return f"{shown}, not the block inserted{where} (block id {block_id_of(real)})"

    def _check_get(self, k: int, got: object, op: str, requirement: str | None = None) -> None:
        present = k in self.state.refs
        if present:
            self.checked["GET-IDENTITY"] += 1
            if got is self.blocks[k]:
                return
            rid = requirement or "GET-IDENTITY"
            if got is not None:
                rid = "GET-IDENTITY"
            what = "None" if got is None else self._other_block(k, got)
            self._fail(rid, f"after {op}, get({k}) returned {what}; key {k} is present and "
                       "the spec requires the very block inserted")
        else:
            self.checked["GET-ABSENT"] += 1
            if got is None:
                return
            rid = requirement or "GET-ABSENT"
            self._fail(rid, f"after {op}, get({k}) returned {got!r}; key {k} is absent and the "
                       "spec requires None")


_HANDLERS: dict[str, Callable[..., object]] = {
    "set_ref": Lockstep._set_ref,
    "set_positions": Lockstep._set_positions,
    "on_store_miss": Lockstep._on_store_miss,
    "on_request_access": Lockstep._on_request_access,
    "on_request_finished": Lockstep._on_request_finished,
    "hook": Lockstep._hook,
    "insert": Lockstep._insert,
    "remove": Lockstep._remove,
    "touch": Lockstep._touch,
    "mark_evictable": Lockstep._mark_evictable,
    "mark_non_evictable": Lockstep._mark_non_evictable,
    "get": Lockstep._get,
    "clear": Lockstep._clear,
    "evict": Lockstep._evict,
    "clock": Lockstep._clock,
}

_TOTAL = {
    "touch": "TOUCH-TOTAL",
    "on_store_miss": "HOOK-TOTAL",
    "on_request_access": "HOOK-TOTAL",
    "on_request_finished": "HOOK-TOTAL",
}
"""Calls whose contract has its own "accepts any keys" requirement: a raise
there breaks it rather than API-NO-RAISE (an observation hook's too:
``Lockstep.observed``)."""

STEP_BACK = "API-CLOCK-STEP-BACK"
"""The SHOULD a failure is reported under when only a step back of the wall
clock makes it (spec/state.md)."""



class _Stop(Exception):
    """A failure ended this call early; the model was not advanced."""


def _show_keys(keys: Iterable[int]) -> str:
    return set_text(keys) if isinstance(keys, frozenset | set) else keys_text(keys)


def _copy(given: Any) -> Any:
    """A copy of a mutable container handed to the policy, to tell later
    whether it changed (API-ARGS-UNCHANGED); None for one the policy cannot
    change (tuple, frozenset, a read-only dict view) or read again (a
    generator). Only lists and sets are kept, so a harness stays copyable
    (``engines.snapshot.fork``: a view or a generator cannot be copied)."""
    if isinstance(given, list):
        return list(given)
    if isinstance(given, set):
        return set(given)
    return None


def _evict_message(
    rid: str, profile: str, n: int, protected: frozenset[int], victims: object,
    expected: object, state: State,
) -> str:
    call = f"evict({n}, {_show_keys(protected)})"
    shown = "None" if victims is None else _show_keys(victims)  # type: ignore[arg-type]
    eligible = [k for k in state.idle if k not in protected]
    pinned = sorted(k for k, r in state.refs.items() if r != 0)
    if rid == "EVICT-ZERO":
        return f"{call} returned {shown}; the spec requires []"
    if rid == "EVICT-EXACT-N":
        return f"{call} returned {shown}; the spec requires exactly {n} distinct keys"
    if rid == "EVICT-UNPROTECTED":
        return f"{call} returned {shown}, which names a protected key"
    if rid == "EVICT-IDLE-ONLY":
        return (
            f"{call} returned {shown}; only idle keys {_show_keys(sorted(state.idle))} may be "
            f"evicted (in flight or being read: {_show_keys(pinned)})"
        )
    if rid == "EVICT-LIVENESS":
        count = len(eligible)
        return (
            f"{call} returned None while {count} key{'' if count == 1 else 's'} "
            f"{'was' if count == 1 else 'were'} eligible {_show_keys(eligible)}; the spec "
            f"asks for {n} of them"
        )
    want = "None" if expected is None else _show_keys(expected)  # type: ignore[arg-type]
    return f"{call} returned {shown}; the {profile} profile requires {want}"


def block_id_of(block: object) -> object:
    """The id a block carries: ``block_id``, or ``chunk_id`` from R7 on."""
    for name in ("block_id", "chunk_id"):
        if hasattr(block, name):
            return getattr(block, name)
    return None
