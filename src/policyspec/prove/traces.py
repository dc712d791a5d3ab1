"""The weaker fallback: a bounded symbolic search over short call sequences.

Without an abstraction pair a policy can only be reached through its own
calls, from a fresh instance. A call sequence is a short list of symbolic
ints; each picks one of the caller actions the caller contract allows in
the model's current state (``options``), so every path CrossHair explores is
a legal run and none is spent on sequences the manager never makes. The
actions drive the Lockstep harness. CrossHair is weak on sequences (TOOLS.md:
a needle six calls deep was not found in two minutes), so this finds
shallow faults only, and ``prove`` says so.
"""

from __future__ import annotations

from collections.abc import Sequence

from policyspec.harness import Aborted, ConformanceFailure, Lockstep
from policyspec.model.actions import Action
from policyspec.model.state import IN_FLIGHT, State
from policyspec.prove.commute import ProofSubject

__all__ = [
    "MAX_CHOICE",
    "TRACE_KEYS",
    "TRACE_STEPS",
    "bounded_choices",
    "options",
    "pick",
    "run_choices",
    "trace_failure",
]

TRACE_KEYS = 3
"""Distinct keys in a symbolic call sequence; also the policy's capacity."""
TRACE_STEPS = 6
"""Caller actions in a symbolic call sequence, at most."""
MAX_CHOICE = 64
"""Choices are ints in 0..MAX_CHOICE-1 (more than any state has options)."""


def bounded_choices(choices: list[int]) -> bool:
    """The precondition: at most TRACE_STEPS choices, each in range."""
    return len(choices) <= TRACE_STEPS and all(0 <= c < MAX_CHOICE for c in choices)


def pick(choice: int, count: int) -> int:
    """``choice`` as a concrete index below ``count``, found by halving:
    under CrossHair each index is about equally likely to be tried, where a
    chain of ``==`` tests would favour the first ones. Choices past the end
    pick the last option."""
    low, high = 0, count
    while high - low > 1:
        middle = (low + high) // 2
        if choice < middle:
            high = middle
        else:
            low = middle
    return low


def options(state: State, has_clear: bool = True) -> list[Action]:
    """The caller actions allowed in ``state`` over TRACE_KEYS keys: what the
    manager does (stores, their completion or failure, loads), plus touch,
    evict with and without a protected key, and clear (no ``get``: the
    harness already asks get for every key after each call). Built to meet
    the caller contract (``is_legal`` holds for each; the tests check it)
    rather than filtered, which cost a third of every path under CrossHair."""
    keys = range(TRACE_KEYS)
    room = len(state.refs) < TRACE_KEYS
    found: list[Action] = []
    for key in keys:
        ref = state.refs.get(key)
        if ref is None:
            if room:
                found.append(("insert", key, IN_FLIGHT))
        elif ref == IN_FLIGHT:
            found.extend([("finish_store", key), ("remove", key)])
        else:
            found.append(("start_read", key))
            if ref > 0:
                found.append(("end_read", key))
    found.extend(("touch", (a, b)) for a in keys for b in keys if a != b)
    found.extend(("evict", n, frozenset()) for n in range(1, TRACE_KEYS + 1))
    found.extend(("evict", 1, frozenset({key})) for key in keys)
    if has_clear:
        found.append(("clear",))
    return found


def run_choices(
    target: ProofSubject, choices: Sequence[int]
) -> tuple[str | None, list[Action]]:
    """Drive a fresh policy through the chosen actions: the requirement the
    first failing one breaks (or None) and the actions run up to it."""
    harness = Lockstep(
        target.subject, target.profile, TRACE_KEYS,
        fatal=(lambda rid: True) if target.strict else None,
    )
    has_clear = target.subject.has("clear")
    taken: list[Action] = []
    for choice in choices:
        allowed = options(harness.state, has_clear)
        action = allowed[pick(choice, len(allowed))]
        taken.append(action)
        try:
            harness.apply(action)
        except ConformanceFailure as failure:
            return failure.requirement, taken
        except Aborted as aborted:
            return aborted.failure.requirement, taken
    return None, taken


def trace_failure(target: ProofSubject, choices: Sequence[int]) -> str | None:
    """The requirement the chosen sequence breaks on a fresh policy, or None."""
    return run_choices(target, choices)[0]
