"""One operation, policy and model side by side: does the square commute?

``check_step`` builds the policy from a model state through its abstraction
pair, applies one operation to the policy and to the model, and compares
what came back and the abstracted state after. It is plain Python: CrossHair
runs it on a symbolic pre-state (policyspec.prove.obligations), and the CLI
runs it again on the concrete counterexample to explain it.

On the symbolic path it only compares; messages are built later, from the
concrete replay, so that no symbolic value is forced to a string.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from policyspec.adapters.seed import unwrap
from policyspec.model import operations as ops
from policyspec.model.evict import commit_evict, evict_violation
from policyspec.model.state import State
from policyspec.model.step import PRESENCE_REQUIREMENT
from policyspec.profiles import Profile
from policyspec.prove.abstraction import Abstraction
from policyspec.subject import Block, Subject
from policyspec.vllm.standins.gaps import raise_if_gap

__all__ = ["Divergence", "ProofSubject", "check_step"]

# The requirement a wrong state after ``op`` breaks: presence, then
# eligibility (the idle set). Order (exact profiles) goes to the
# refinement's culprit for ``op``.
_PRESENCE = PRESENCE_REQUIREMENT
_ELIGIBILITY = {
    **_PRESENCE,
    "insert": "INSERT-IN-FLIGHT-NOT-ELIGIBLE",
    "mark_evictable": "MARK-EVICTABLE-ELIGIBLE",
    "mark_non_evictable": "MARK-NON-EVICTABLE-PINS",
}
_NEW_BLOCK_ID = 100


@dataclass(frozen=True)
class ProofSubject:
    """What ``prove`` checks: the policy, its pair, and the profile."""

    subject: Subject
    abstraction: Abstraction | None
    profile: Profile
    strict: bool = False
    """Report SHOULD failures (EVICT-LIVENESS under core) too."""

    @property
    def exact(self) -> bool:
        return self.profile.refinement is not None


@dataclass
class Divergence:
    """Where policy and model part: the requirement, and both sides."""

    requirement: str
    op: str
    args: tuple[Any, ...]
    before: State
    expected: State | None = None
    got: State | None = None
    expected_result: Any = None
    got_result: Any = None
    note: str = ""
    blocks: dict[int, Any] = field(default_factory=dict)


def check_step(
    target: ProofSubject, op: str, state: State, args: Sequence[Any]
) -> Divergence | None:
    """None when ``op(*args)`` from ``state`` commutes with the model,
    otherwise the first requirement it breaks. ``state`` must be a legal
    pre-state for ``op`` (policyspec.prove.canonical.legal)."""
    assert target.abstraction is not None, "check_step needs an abstraction pair"
    args = tuple(args)
    blocks: dict[int, Any] = {key: Block(ref, key) for key, ref in state.refs.items()}
    written = dict(state.refs)
    view = target.subject.build(state.capacity if state.capacity is not None else len(blocks))
    raw = unwrap(view)
    target.abstraction.from_model(raw, state.copy(), dict(blocks))

    def diverge(requirement: str, **more: Any) -> Divergence:
        return Divergence(requirement, op, args, state, blocks=blocks, **more)

    call_args: tuple[Any, ...] = args
    if op == "insert":
        block = Block(args[1], _NEW_BLOCK_ID)
        call_args = (args[0], block)
    elif op == "touch":
        call_args = (list(args[0]),)
    elif op == "evict":
        call_args = (args[0], set(args[1]))
    try:
        got_result = getattr(view, op)(*call_args)
    except Exception as exc:  # a legal call must return normally
        raise_if_gap(exc)
        return diverge("API-NO-RAISE", got_result=exc)
    if op == "insert":
        blocks[args[0]] = call_args[1]
        written[args[0]] = args[1]
    if (op == "touch" and call_args[0] != list(args[0])) or (
        op == "evict" and call_args[1] != set(args[1])
    ):
        return diverge("API-ARGS-UNCHANGED", got_result=call_args)
    for key, block in blocks.items():
        # ``is`` first: an untouched field holds the very (maybe symbolic)
        # value written, and CrossHair then needs no solver call.
        ref, want = block.ref_cnt, written[key]
        block_id = _NEW_BLOCK_ID if op == "insert" and key == args[0] else key
        if (ref is not want and ref != want) or block.block_id != block_id:
            return diverge("BLOCK-NO-WRITE", got_result=(key, block))

    outcome = _expected(target, op, state, args, blocks, got_result)
    if isinstance(outcome, Divergence):
        return outcome
    expected, expected_result = outcome
    try:
        after = target.abstraction.to_model(raw)
    except Exception as exc:
        return diverge(_PRESENCE[op], expected=expected, note=f"to_model raised {exc!r}")
    same_set = sorted(after.idle) == sorted(expected.idle) and len(set(after.idle)) == len(
        after.idle
    )
    if after.refs != expected.refs or not same_set:
        rid = (_PRESENCE if after.refs != expected.refs else _ELIGIBILITY)[op]
        if op == "evict" and got_result is None:
            rid = "EVICT-ATOMIC"
        return diverge(rid, expected=expected, got=after, expected_result=expected_result,
                       got_result=got_result)
    refinement = target.profile.refinement
    if refinement is not None and after.idle != expected.idle:
        return diverge(
            refinement.culprit(op), expected=expected, got=after,
            expected_result=expected_result, got_result=got_result,
        )
    return None


def _expected(
    target: ProofSubject,
    op: str,
    state: State,
    args: tuple[Any, ...],
    blocks: dict[int, Any],
    got: Any,
) -> Divergence | tuple[State, Any]:
    """The model's state after ``op`` and its result, or the divergence of
    the result itself (get and evict have results to judge)."""
    if op == "get":
        key = args[0]
        want = blocks.get(key)
        if got is not want:
            rid = "GET-IDENTITY" if key in state.refs else "GET-ABSENT"
            return Divergence(rid, op, args, state, expected_result=want, got_result=got,
                              blocks=blocks)
        return state.copy(), want
    if op == "evict":
        return _expected_evict(target, state, args[0], args[1], blocks, got)
    transition = getattr(ops, op)
    return transition(state, *args), None


def _expected_evict(
    target: ProofSubject,
    state: State,
    n: int,
    protected: Collection[int],
    blocks: dict[int, Any],
    got: Any,
) -> Divergence | tuple[State, Any]:
    args = (n, protected)

    def diverge(requirement: str, want: Any = None) -> Divergence:
        return Divergence(requirement, "evict", args, state, expected_result=want,
                          got_result=got, blocks=blocks)

    victims: list[int] | None = None
    if got is not None:
        if not isinstance(got, list):
            return diverge("EVICT-SHAPE")
        victims = []
        for item in got:
            if not (isinstance(item, tuple) and len(item) == 2):
                return diverge("EVICT-SHAPE")
            key, block = item
            if not isinstance(key, int) or key not in state.refs:
                return diverge("EVICT-IDLE-ONLY")
            if block is not blocks[key]:
                return diverge("EVICT-IDENTITY")
            victims.append(key)
    violation = evict_violation(state, n, protected, victims)
    refinement = target.profile.refinement
    if violation == "EVICT-LIVENESS" and not target.strict and refinement is None:
        violation = None
    if violation is not None and violation != "EVICT-LIVENESS":
        return diverge(violation)
    if refinement is not None:
        _, want, _ = refinement.evict(None, state, n, protected)
        if victims != want:
            rid = (
                refinement.liveness_requirement if victims is None
                else refinement.order_requirement
            )
            return diverge(rid, want)
    if violation is not None:
        return diverge(violation)
    if victims is None:
        return state.copy(), None
    return commit_evict(state, victims), victims
