"""The functions CrossHair analyses for ``policyspec prove TARGET``: each
``refines_<op>`` states that one operation from any legal symbolic
pre-state agrees with the profile's model (spec/prove.md). They use
CrossHair's ``asserts`` kind rather than PEP 316, which would also enforce
every contract of the model functions they call on every path and prove
nothing new. The policy under proof is loaded once, at import, before
CrossHair starts tracing.
"""

from __future__ import annotations

import atexit
import contextlib

from crosshair.core import realize
from crosshair.tracers import NoTracing, is_tracing

from policyspec.adapters import installed
from policyspec.harness import lockstep
from policyspec.prove.canonical import decode, legal, pack, past_of, unpack
from policyspec.prove.commute import ProofSubject, check_step
from policyspec.prove.derived import derived_failure
from policyspec.prove.proof_target import from_environment
from policyspec.registry import load_registry

__all__ = [
    "FUNCTIONS",
    "refines_clear",
    "refines_evict",
    "refines_get",
    "refines_insert",
    "refines_mark_evictable",
    "refines_mark_non_evictable",
    "refines_on_request_access",
    "refines_on_request_finished",
    "refines_on_store_miss",
    "refines_remove",
    "refines_touch",
]

_REGISTRY = load_registry()  # read the TOML files now, before CrossHair traces
# CrossHair calls through functools caches (it must not cache symbolic
# arguments), so the harness's ``load_registry()`` would parse the TOML files
# again on every path, which took most of the fallback search's time. The
# harness gets the registry loaded above instead, in this process only.
lockstep.load_registry = lambda: _REGISTRY  # type: ignore[assignment,attr-defined]
_STAND_INS = contextlib.ExitStack()
_STAND_INS.enter_context(installed())  # (a no-op when vLLM itself is importable)
atexit.register(_STAND_INS.close)  # while sys.meta_path still exists
SUBJECT: ProofSubject | None = from_environment()


def _untraced() -> contextlib.AbstractContextManager[object]:
    """CrossHair's tracing off for the block (nothing outside CrossHair)."""
    if is_tracing():  # type: ignore[no-untyped-call]
        return NoTracing()  # type: ignore[no-untyped-call,no-any-return]
    return contextlib.nullcontext()


def _step(op: str, *values: int) -> str | None:
    """The requirement ``op`` breaks from the pre-state the (legal) values
    stand for, or None. The values are realized as two packed ints (one
    path per legal value) and the harness and the policy run untraced: on
    concrete values CrossHair has nothing left to branch on, and under
    tracing the harness (which hashes keys and compares blocks on every
    call) cost several times as much per path."""
    assert SUBJECT is not None, "no target: set POLICYSPEC_PROVE_TARGET"
    state_code, args_code = pack(op, values)
    concrete = unpack(op, realize(state_code), realize(args_code))
    with _untraced():
        state, model_args = decode(op, concrete)
        if SUBJECT.abstraction is not None:  # (a hand-written pair has no past)
            divergence = check_step(SUBJECT, op, state, model_args)
            return None if divergence is None else divergence.requirement
        failure = derived_failure(SUBJECT, op, state, model_args, past_of(op, concrete))
        return None if failure is None else failure.requirement


def refines_get(
    n_idle: int, n_busy: int, reads: int, capacity: int, past: int, key: int
) -> None:
    """get(key) returns the block of a present key, None for an absent one
    (``past``: one stored and evicted before), and changes nothing."""
    assert legal("get", n_idle, n_busy, reads, capacity, past, key)
    broken = _step("get", n_idle, n_busy, reads, capacity, past, key)
    assert broken is None, broken


def refines_insert(
    n_idle: int, n_busy: int, reads: int, capacity: int, past: int, key: int, ref_cnt: int
) -> None:
    """insert(key, block) agrees with the model (``past``: the key was
    stored and evicted before; for a policy with the request hooks, with a
    fresh storing request's context)."""
    assert legal("insert", n_idle, n_busy, reads, capacity, past, key, ref_cnt)
    broken = _step("insert", n_idle, n_busy, reads, capacity, past, key, ref_cnt)
    assert broken is None, broken


def refines_remove(n_idle: int, n_busy: int, reads: int, capacity: int, key: int) -> None:
    """remove(key) agrees with the model."""
    assert legal("remove", n_idle, n_busy, reads, capacity, key)
    broken = _step("remove", n_idle, n_busy, reads, capacity, key)
    assert broken is None, broken


def refines_touch(
    n_idle: int, n_busy: int, reads: int, capacity: int, past: int, count: int, key0: int,
    key1: int, key2: int,
) -> None:
    """touch(keys) agrees with the model: ``count`` keys of key0..key2
    (``past``: the absent key was stored and evicted before)."""
    assert legal("touch", n_idle, n_busy, reads, capacity, past, count, key0, key1, key2)
    broken = _step("touch", n_idle, n_busy, reads, capacity, past, count, key0, key1, key2)
    assert broken is None, broken


def refines_mark_evictable(
    n_idle: int, n_busy: int, reads: int, capacity: int, key: int
) -> None:
    """mark_evictable(key), at the end of the key's load, agrees with the
    model."""
    assert legal("mark_evictable", n_idle, n_busy, reads, capacity, key)
    broken = _step("mark_evictable", n_idle, n_busy, reads, capacity, key)
    assert broken is None, broken


def refines_mark_non_evictable(
    n_idle: int, n_busy: int, reads: int, capacity: int, key: int
) -> None:
    """mark_non_evictable(key), at the start of a load, agrees with the
    model."""
    assert legal("mark_non_evictable", n_idle, n_busy, reads, capacity, key)
    broken = _step("mark_non_evictable", n_idle, n_busy, reads, capacity, key)
    assert broken is None, broken


def refines_evict(
    n_idle: int, n_busy: int, reads: int, capacity: int, n: int, protected: int
) -> None:
    """evict(n, protected) returns an outcome the profile allows and leaves
    the state the model says (``protected``: a bit mask over the keys)."""
    assert legal("evict", n_idle, n_busy, reads, capacity, n, protected)
    broken = _step("evict", n_idle, n_busy, reads, capacity, n, protected)
    assert broken is None, broken


def refines_clear(n_idle: int, n_busy: int, reads: int, capacity: int) -> None:
    """clear() agrees with the model."""
    assert legal("clear", n_idle, n_busy, reads, capacity)
    broken = _step("clear", n_idle, n_busy, reads, capacity)
    assert broken is None, broken


def refines_on_store_miss(
    n_idle: int, n_busy: int, reads: int, capacity: int, past: int, count: int, key0: int,
    key1: int, placed: int,
) -> None:
    """on_store_miss(keys) of a fresh request (``past``: the missed key was
    stored and evicted before) changes no key's presence or eligibility,
    and an exact profile's state as its model says."""
    assert legal("on_store_miss", n_idle, n_busy, reads, capacity, past, count, key0, key1,
                 placed)
    broken = _step("on_store_miss", n_idle, n_busy, reads, capacity, past, count, key0, key1,
                   placed)
    assert broken is None, broken


def refines_on_request_access(
    n_idle: int, n_busy: int, reads: int, capacity: int, past: int, count: int, key0: int,
    key1: int, placed: int,
) -> None:
    """on_request_access(keys) of a fresh request, as on_store_miss."""
    assert legal("on_request_access", n_idle, n_busy, reads, capacity, past, count, key0, key1,
                 placed)
    broken = _step("on_request_access", n_idle, n_busy, reads, capacity, past, count, key0,
                   key1, placed)
    assert broken is None, broken


def refines_on_request_finished(
    n_idle: int, n_busy: int, reads: int, capacity: int, count: int, key0: int, key1: int,
    kind0: int, kind1: int, placed: int,
) -> None:
    """on_request_finished of a fresh request whose one group is the keys
    (each insertion-only, reused or neither: ``kind0``, ``kind1``), as
    on_store_miss."""
    assert legal("on_request_finished", n_idle, n_busy, reads, capacity, count, key0, key1,
                 kind0, kind1, placed)
    broken = _step("on_request_finished", n_idle, n_busy, reads, capacity, count, key0, key1,
                   kind0, kind1, placed)
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
    "on_store_miss": refines_on_store_miss,
    "on_request_access": refines_on_request_access,
    "on_request_finished": refines_on_request_finished,
}
"""The obligation of each operation."""
