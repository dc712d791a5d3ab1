"""The functions CrossHair analyses for ``policyspec prove TARGET``.

Each ``refines_<op>`` states that one operation from any legal symbolic
pre-state commutes with the model (policyspec.prove.commute); its arguments
are the plain values of policyspec.prove.canonical. ``explores_calls`` is
the fallback for policies without an abstraction pair.

They are written for CrossHair's ``asserts`` kind (leading asserts are the
precondition; a later failing assert, whose message is the broken
requirement id, is a counterexample) rather than PEP 316: under PEP 316
CrossHair would also enforce every contract of the model functions they
call and the ``State`` invariant on each construction, which took most of
the time of every path and proves nothing new here.

The policy under proof is named by environment variables (set by the parent
process, policyspec.prove.proof_target) and loaded once, at import, before
CrossHair starts tracing.
"""

from __future__ import annotations

from typing import Any

from policyspec.harness import lockstep
from policyspec.prove.canonical import decode, legal
from policyspec.prove.commute import ProofSubject, check_step
from policyspec.prove.proof_target import from_environment
from policyspec.prove.traces import bounded_choices, trace_failure
from policyspec.registry import load_registry

__all__ = [
    "FUNCTIONS",
    "explores_calls",
    "refines_clear",
    "refines_evict",
    "refines_get",
    "refines_insert",
    "refines_mark_evictable",
    "refines_mark_non_evictable",
    "refines_remove",
    "refines_touch",
]

_REGISTRY = load_registry()  # read the TOML files now, before CrossHair traces
# CrossHair calls through functools caches (it must not cache symbolic
# arguments), so the harness's ``load_registry()`` would parse the TOML files
# again on every path: measured at 90% of the fallback search's time. The
# harness gets the registry loaded above instead, in this process only.
lockstep.load_registry = lambda: _REGISTRY  # type: ignore[assignment,attr-defined]
SUBJECT: ProofSubject | None = from_environment()


def _step(op: str, n_idle: int, busy: list[int], capacity: int, *args: Any) -> str | None:
    assert SUBJECT is not None, "no target: set POLICYSPEC_PROVE_TARGET"
    state, model_args = decode(op, n_idle, busy, capacity, args)
    divergence = check_step(SUBJECT, op, state, model_args)
    return None if divergence is None else divergence.requirement


def refines_get(n_idle: int, busy: list[int], capacity: int, key: int) -> None:
    """get(key) returns the block of a present key, None for an absent one,
    and changes nothing."""
    assert legal("get", n_idle, busy, capacity, key)
    broken = _step("get", n_idle, busy, capacity, key)
    assert broken is None, broken


def refines_insert(
    n_idle: int, busy: list[int], capacity: int, key: int, ref_cnt: int
) -> None:
    """insert(key, block) commutes with operations.insert."""
    assert legal("insert", n_idle, busy, capacity, key, ref_cnt)
    broken = _step("insert", n_idle, busy, capacity, key, ref_cnt)
    assert broken is None, broken


def refines_remove(n_idle: int, busy: list[int], capacity: int, key: int) -> None:
    """remove(key) commutes with operations.remove."""
    assert legal("remove", n_idle, busy, capacity, key)
    broken = _step("remove", n_idle, busy, capacity, key)
    assert broken is None, broken


def refines_touch(n_idle: int, busy: list[int], capacity: int, keys: list[int]) -> None:
    """touch(keys) commutes with operations.touch."""
    assert legal("touch", n_idle, busy, capacity, keys)
    broken = _step("touch", n_idle, busy, capacity, keys)
    assert broken is None, broken


def refines_mark_evictable(
    n_idle: int, busy: list[int], capacity: int, key: int
) -> None:
    """mark_evictable(key) commutes with operations.mark_evictable."""
    assert legal("mark_evictable", n_idle, busy, capacity, key)
    broken = _step("mark_evictable", n_idle, busy, capacity, key)
    assert broken is None, broken


def refines_mark_non_evictable(
    n_idle: int, busy: list[int], capacity: int, key: int
) -> None:
    """mark_non_evictable(key) commutes with operations.mark_non_evictable."""
    assert legal("mark_non_evictable", n_idle, busy, capacity, key)
    broken = _step("mark_non_evictable", n_idle, busy, capacity, key)
    assert broken is None, broken


def refines_evict(
    n_idle: int, busy: list[int], capacity: int, n: int, protected: list[int]
) -> None:
    """evict(n, protected) returns an outcome the profile allows and leaves
    the state the model says."""
    assert legal("evict", n_idle, busy, capacity, n, protected)
    broken = _step("evict", n_idle, busy, capacity, n, protected)
    assert broken is None, broken


def refines_clear(n_idle: int, busy: list[int], capacity: int) -> None:
    """clear() commutes with operations.clear."""
    assert legal("clear", n_idle, busy, capacity)
    broken = _step("clear", n_idle, busy, capacity)
    assert broken is None, broken


def explores_calls(choices: list[int]) -> None:
    """A short legal call sequence from a fresh policy breaks nothing
    (policyspec.prove.traces; weaker than the refinement obligations)."""
    assert bounded_choices(choices)
    assert SUBJECT is not None, "no target: set POLICYSPEC_PROVE_TARGET"
    broken = trace_failure(SUBJECT, choices)
    assert broken is None, broken


FUNCTIONS = {
    "get": refines_get,
    "insert": refines_insert,
    "remove": refines_remove,
    "touch": refines_touch,
    "mark_evictable": refines_mark_evictable,
    "mark_non_evictable": refines_mark_non_evictable,
    "evict": refines_evict,
    "clear": refines_clear,
}
"""The refinement obligation of each operation."""
