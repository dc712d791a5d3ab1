"""The lockstep harness: one policy and the model, driven side by side.

The harness plays vLLM's manager: it owns the block objects, writes ref_cnt
as the manager does, and only makes calls the caller contract allows (the
model's predicates decide). After every call it compares everything
observable with the model and raises a ``ConformanceFailure`` naming the
requirement broken.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterable
from time import monotonic
from typing import Any

from policyspec.harness.failures import (
    Aborted,
    CallerContractError,
    ConformanceFailure,
    ProcessDied,
    failure_type,
)
from policyspec.harness.watchdog import CallTimeout
from policyspec.harness.watchdog import current as _watch
from policyspec.model import operations as ops
from policyspec.model.actions import Action, Primitive, expand, is_legal
from policyspec.model.evict import commit_evict, evict_violation
from policyspec.model.state import State
from policyspec.profiles import Profile
from policyspec.registry import load_registry
from policyspec.subject import Subject

__all__ = ["Lockstep"]

# Which requirement a presence change breaks, by the call that made it.
_PRESENCE_REQ = {
    "insert": "INSERT-ADDS",
    "remove": "REMOVE-DROPS",
    "touch": "TOUCH-KEEPS-MEMBERSHIP",
    "mark_evictable": "MARK-KEEPS-MEMBERSHIP",
    "mark_non_evictable": "MARK-KEEPS-MEMBERSHIP",
    "evict": "EVICT-REMOVES",
    "clear": "CLEAR-EMPTIES",
    "get": "GET-PURE",
}


class Lockstep:
    """Drives ``subject`` and the model through caller actions.

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
    ) -> None:
        self.subject = subject
        self.profile = profile
        self.capacity = capacity
        self.observe = observe
        registry = load_registry()
        self.fatal = fatal or (lambda rid: registry[rid].level == "MUST")
        self.refinement = profile.refinement
        self.ext: Any = self.refinement.start(capacity) if self.refinement else None
        self.state = State(capacity=capacity)
        self.policy = subject.build(capacity)
        self.has_mark = subject.has("mark")
        self.has_clear = subject.has("clear")
        self.isolated = subject.has("isolated")
        self.blocks: dict[int, Any] = {}
        self.written: dict[int, tuple[int, int]] = {}
        self.known: set[int] = set()
        self.trace: list[Action] = []
        self.soft: list[ConformanceFailure] = []
        self.checked: Counter[str] = Counter()
        self.calls = 0
        self._real: dict[int, Hashable] = {}
        self._model: dict[Hashable, int] = {}
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

    # -- keys ---------------------------------------------------------------

    def key(self, k: int) -> Hashable:
        """The real key for model key ``k`` (made once, then reused)."""
        real = self._real.get(k)
        if real is None:
            real = self.subject.make_key(k)
            self._real[k] = real
            self._model[real] = k
        return real

    def model_key(self, real: object) -> int | None:
        """The model key of a real key, or None for a key never handed out."""
        try:
            return self._model.get(real)
        except TypeError:  # unhashable
            return None

    def _show(self, value: object) -> str:
        """An argument as the report shows it: real keys by their model
        number (``key 3``), containers of keys as model numbers too."""
        if isinstance(value, list | tuple | set | frozenset):
            numbers = [self.model_key(v) for v in value]
            if all(n is not None for n in numbers):
                shown = ", ".join(str(n) for n in (sorted(numbers) if isinstance(  # type: ignore[type-var]
                    value, set | frozenset) else numbers))
                return "{" + shown + "}" if isinstance(value, set | frozenset) else f"[{shown}]"
        number = self.model_key(value)
        return f"key {number}" if number is not None else repr(value)

    # -- driving ------------------------------------------------------------

    def apply(self, action: Action) -> object:
        """Run one caller action on policy and model; return the policy's
        result of its last call (the victims for evict, the block for get)."""
        if not is_legal(self.state, action):
            raise CallerContractError(f"illegal action {action!r} in state {self.state!r}")
        self.trace.append(action)
        result: object = None
        for primitive in expand(self.state, action):
            result = self._primitive(primitive)
        return result

    def run(self, actions: Iterable[Action]) -> None:
        for action in actions:
            self.apply(action)

    def _fail(self, requirement: str, message: str) -> None:
        failure = failure_type(requirement)(requirement, message, tuple(self.trace))
        if self.fatal(requirement):
            if requirement in _COSTLY:
                raise Aborted(failure)  # each replay would hang or kill again
            raise failure
        if all(f.requirement != requirement for f in self.soft):
            self.soft.append(failure)

    def _call(self, op: str, method: Callable[..., Any], *args: Any) -> Any:
        self.calls += 1
        self.checked["API-NO-RAISE"] += 1
        self.checked["API-RETURNS"] += 1
        if self.isolated:
            self.checked["API-PROCESS-ALIVE"] += 1
        watch = _watch
        watch.op, watch.since = op, monotonic()
        try:
            return method(*args)
        except CallTimeout:
            watch.op = None
            shown = ", ".join(self._show(a) for a in args)
            self._fail(
                "API-RETURNS",
                f"{op}({shown}) did not return within the call time limit; the spec requires "
                "every call to return",
            )
            raise _Stop from None
        except (ProcessDied, MemoryError) as exc:
            shown = ", ".join(self._show(a) for a in args)
            what = "ran out of memory" if isinstance(exc, MemoryError) else "ended"
            self._fail(
                "API-PROCESS-ALIVE",
                f"the policy's process {what} during {op}({shown}): {exc}; the spec requires "
                "the policy never to end or crash the process",
            )
            raise _Stop from None
        except (KeyboardInterrupt, ConformanceFailure):
            raise
        except (Exception, SystemExit) as exc:  # the policy's own fault becomes a verdict
            shown = ", ".join(self._show(a) for a in args)
            self._fail(
                "TOUCH-TOTAL" if op == "touch" else "API-NO-RAISE",
                f"{op}({shown}) raised {type(exc).__name__}: {exc}; the call meets the "
                "caller contract, so the spec requires it to return normally",
            )
            raise _Stop from exc
        finally:
            watch.op = None

    def _primitive(self, call: Primitive) -> object:
        op = call[0]
        try:
            handler = getattr(self, "_do_" + op)
            result: object = handler(*call[1:])
        except _Stop:
            return None
        self._check_blocks(op)
        if self.observe:
            requirement = _PRESENCE_REQ.get(op, "GET-PURE")
            if op == "evict" and result is None:
                requirement = "EVICT-ATOMIC"
            self._check_presence(op, requirement)
        return result

    def _do_set_ref(self, k: int, ref: int) -> None:
        block = self.blocks[k]
        block.ref_cnt = ref
        self.written[k] = (ref, self.written[k][1])
        self.state.refs[k] = ref

    def _do_insert(self, k: int, ref: int) -> None:
        if self.allocator is None:
            block_id = self._next_block_id
            self._next_block_id += 1
        else:
            block_id = self.allocator(k)
        block = self.subject.make_block(ref, block_id)
        self.known.add(k)
        self._call("insert", self.policy.insert, self.key(k), block)
        if self.refinement:
            self.ext = self.refinement.insert(self.ext, self.state, k, ref)
        self.state = ops.insert(self.state, k, ref)
        self.blocks[k] = block
        self.written[k] = (ref, block_id)

    def _do_remove(self, k: int) -> None:
        self._call("remove", self.policy.remove, self.key(k))
        if self.refinement:
            self.ext = self.refinement.remove(self.ext, self.state, k)
        self.state = ops.remove(self.state, k)
        self._forget(k)

    def _do_touch(self, keys: tuple[int, ...]) -> None:
        self.known.update(keys)
        given = [self.key(k) for k in keys]
        original = list(given)
        self._call("touch", self.policy.touch, given)
        self._keep_given("touch", given, original)
        self.checked["TOUCH-TOTAL"] += 1
        if self.refinement:
            self.ext = self.refinement.touch(self.ext, self.state, keys)
        self.state = ops.touch(self.state, keys)

    def _do_mark_evictable(self, k: int) -> None:
        if self.has_mark:
            self._call("mark_evictable", self.policy.mark_evictable, self.key(k))
        if self.refinement:
            self.ext = self.refinement.mark_evictable(self.ext, self.state, k)
        self.state = ops.mark_evictable(self.state, k)

    def _do_mark_non_evictable(self, k: int) -> None:
        if self.has_mark:
            self._call("mark_non_evictable", self.policy.mark_non_evictable, self.key(k))
        if self.refinement:
            self.ext = self.refinement.mark_non_evictable(self.ext, self.state, k)
        self.state = ops.mark_non_evictable(self.state, k)

    def _do_get(self, k: int) -> object:
        self.known.add(k)
        got = self._call("get", self.policy.get, self.key(k))
        self._check_get(k, got, "get")
        return got

    def _do_clear(self) -> None:
        if not self.has_clear:
            raise CallerContractError("clear() on a policy without clear")
        self._call("clear", self.policy.clear)
        if self.refinement:
            self.ext = self.refinement.clear(self.ext, self.state)
        self.state = ops.clear(self.state)
        for k in list(self.blocks):
            self._forget(k)

    def _do_evict(self, n: int, protected: frozenset[int]) -> object:
        self.known.update(protected)
        real_protected = {self.key(k) for k in protected}
        original = set(real_protected)
        self.last_evict = None
        result = self._call("evict", self.policy.evict, n, real_protected)
        self.last_evict = result
        self._keep_given("evict", real_protected, original)
        victims = self._victims(n, protected, result)
        self._judge_evict(n, protected, victims)
        return result

    # -- evict ----------------------------------------------------------------

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
                    f"{call} returned key {real!r}, which is not present; the spec requires "
                    "idle present keys only",
                )
                raise _Stop
            self.checked["EVICT-IDENTITY"] += 1
            if block is not self.blocks[k]:
                self._fail(
                    "EVICT-IDENTITY",
                    f"{call} returned for key {k} the object {block!r}, not the block inserted "
                    f"({self.blocks[k]!r}); the spec requires the identical object",
                )
                raise _Stop
            victims.append(k)
        return victims

    def _judge_evict(self, n: int, protected: frozenset[int], victims: list[int] | None) -> None:
        before = self.state
        call = f"evict({n}, {_show_keys(protected)})"
        shown = "None" if victims is None else _show_keys(victims)
        for rid in ("EVICT-EXACT-N", "EVICT-IDLE-ONLY", "EVICT-UNPROTECTED", "EVICT-LIVENESS"):
            self.checked[rid] += 1
        if n == 0:
            self.checked["EVICT-ZERO"] += 1
        # Eligibility that insert and mark_non_evictable established is
        # judged here (spec/evict.md reports its faults as EVICT-IDLE-ONLY).
        refs = before.refs.values()
        if any(r < 0 for r in refs):
            self.checked["INSERT-IN-FLIGHT-NOT-ELIGIBLE"] += 1
        if any(r > 0 for r in refs):
            self.checked["MARK-NON-EVICTABLE-PINS"] += 1
        violation = evict_violation(before, n, protected, victims)
        expected: list[int] | None = victims
        new_ext = self.ext
        if self.refinement:
            new_ext, expected = self.refinement.evict(self.ext, before, n, protected)
            self.checked[self.refinement.order_requirement] += 1
            self.checked[self.refinement.liveness_requirement] += 1
            # Requirements a refinement judges only through the victims of
            # every evict (its per-operation ids: attribution names them).
            self.checked.update(getattr(self.refinement, "judged", ()))
        if violation is not None and violation != "EVICT-LIVENESS":
            self._fail(violation, _evict_message(violation, call, shown, before, n, protected))
            raise _Stop
        if self.refinement and victims != expected:
            rid = (
                self.refinement.liveness_requirement
                if victims is None
                else self.refinement.order_requirement
            )
            want = "None" if expected is None else _show_keys(expected)
            self._fail(rid, f"{call} returned {shown}; the {self.profile.name} profile requires "
                       f"{want}")
            raise _Stop
        if violation == "EVICT-LIVENESS":
            self._fail(violation, _evict_message(violation, call, shown, before, n, protected))
        self.ext = new_ext
        if victims is not None:
            self.state = commit_evict(before, victims)
            for k in victims:
                self._check_block(k, "evict")  # a victim's block is the manager's too
                self._forget(k)

    # -- observation ----------------------------------------------------------

    def _keep_given(self, op: str, given: object, copy: object) -> None:
        """Remember the last few argument containers handed to the policy and
        check that none of them has changed (API-ARGS-UNCHANGED), now or
        later through a reference the policy kept."""
        self.checked["API-ARGS-UNCHANGED"] += 1
        self._given.append((op, given, copy))
        for name, container, original in self._given:
            if container != original:
                self._given.clear()
                self._fail(
                    "API-ARGS-UNCHANGED",
                    f"the {'keys list' if name == 'touch' else 'protected set'} given to "
                    f"{name} was changed by the policy (now {len(container)} items, was "
                    f"{len(original)}); the spec forbids mutating it",
                )

    def _forget(self, k: int) -> None:
        self.blocks.pop(k, None)
        self.written.pop(k, None)

    def _check_blocks(self, op: str) -> None:
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

    def _check_presence(self, op: str, requirement: str) -> None:
        """Ask get for every key seen so far; a wrong answer right after
        ``op`` breaks ``requirement`` (the contract of ``op``)."""
        self.checked[requirement] += 1
        for k in sorted(self.known):
            got = self._call("get", self.policy.get, self.key(k))
            self._check_get(k, got, op, requirement)

    def _check_get(self, k: int, got: object, op: str, requirement: str | None = None) -> None:
        present = k in self.state.refs
        if present:
            self.checked["GET-IDENTITY"] += 1
            if got is self.blocks[k]:
                return
            rid = requirement or "GET-IDENTITY"
            if got is not None:
                rid = "GET-IDENTITY"
            what = "None" if got is None else f"another object {got!r}"
            self._fail(rid, f"after {op}, get({k}) returned {what}; key {k} is present and "
                       "the spec requires the very block inserted")
        else:
            self.checked["GET-ABSENT"] += 1
            if got is None:
                return
            rid = requirement or "GET-ABSENT"
            self._fail(rid, f"after {op}, get({k}) returned {got!r}; key {k} is absent and the "
                       "spec requires None")


_COSTLY = frozenset({"API-RETURNS", "API-PROCESS-ALIVE"})
"""Failures whose replays cost a time limit or a process: engines stop at
once and the trace is shrunk with few tries (check._minimise)."""


class _Stop(Exception):
    """A soft failure ended this call early; the model was not advanced."""


def _show_keys(keys: Iterable[int]) -> str:
    if isinstance(keys, frozenset | set):
        return "{" + ", ".join(str(k) for k in sorted(keys)) + "}"
    return "[" + ", ".join(str(k) for k in keys) + "]"


def _evict_message(
    rid: str, call: str, shown: str, state: State, n: int, protected: frozenset[int]
) -> str:
    eligible = [k for k in state.idle if k not in protected]
    pinned = sorted(k for k, r in state.refs.items() if r != 0)
    return {
        "EVICT-ZERO": f"{call} returned {shown}; the spec requires []",
        "EVICT-EXACT-N": f"{call} returned {shown}; the spec requires exactly {n} distinct keys",
        "EVICT-UNPROTECTED": f"{call} returned {shown}, which names a protected key",
        "EVICT-IDLE-ONLY": (
            f"{call} returned {shown}; only idle keys {_show_keys(sorted(state.idle))} may be "
            f"evicted (in flight or being read: {_show_keys(pinned)})"
        ),
        "EVICT-LIVENESS": (
            f"{call} returned None while {len(eligible)} keys were eligible "
            f"{_show_keys(eligible)}; the spec asks for {n} of them"
        ),
    }.get(rid, f"{call} returned {shown}")
