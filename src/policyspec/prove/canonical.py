"""The symbolic pre-state: a model ``State`` from plain values CrossHair owns.

CrossHair searches well over arguments made of plain ``list``/``int``. It
does not search over keys of *concrete* hashed containers: its symbolic int
hashes by whatever value the solver currently has in mind, without
constraining it, so ``key in ordered_dict`` with a symbolic key silently
explores one value only (seen here: a wrong touch order behind an
OrderedDict was not found in 60 CPU s with symbolic keys). So keys are
concrete, and labelled canonically by what the state says about them:

* keys ``0 .. n_idle-1`` are idle, in eviction order (0 least recent);
* keys ``n_idle ..`` are the busy ones, ``busy[j]`` the ref_cnt of key
  ``n_idle + j`` (-1 in flight, 1 or more being read);
* key ``len(refs)`` stands for every absent key;
* operation arguments name keys by number, made concrete by ``concrete``
  (one branch per possible key).

Naming keys this way loses nothing for a policy that treats keys as opaque
values, which the spec requires, and leaves CrossHair only the shape of the
state to search (how many idle and busy keys, every ref_cnt, the
arguments). An explicit permutation of idle keys (an ``idle`` list of
indexes) was tried first: CrossHair then spent its paths on permutations
and missed a wrong touch order in 25 CPU s that this encoding finds.

The pre-states are the ones the manager can leave a policy in: well formed
and quiescent (idle exactly when ref_cnt is 0), except that before
``mark_evictable(k)`` the busy key ``k`` is at ref_cnt 0 (spec/state.md:
the manager has written the 0 and calls mark_evictable at once).
``MAX_KEYS`` and ``MAX_LIST`` bound the search so that it can end.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from policyspec.model import preconditions as pre
from policyspec.model.state import IDLE, IN_FLIGHT, State

__all__ = [
    "MAX_KEYS",
    "MAX_LIST",
    "OPERATIONS",
    "concrete",
    "decode",
    "decode_state",
    "legal",
]

MAX_KEYS = 3
"""Present keys in a symbolic pre-state, at most."""
MAX_LIST = 3
"""Keys named by touch or protected, at most."""
MAX_REF = 1
"""ref_cnt of a block being read: a policy sees only that it is above 0,
and each further value would multiply the paths to search."""

OPERATIONS = (
    "get",
    "insert",
    "remove",
    "touch",
    "mark_evictable",
    "mark_non_evictable",
    "evict",
    "clear",
)
"""The seed API's eight operations, in spec order."""


def concrete(index: int, universe: int) -> int:
    """``index`` as a concrete int in ``0..universe-1`` (one branch per
    value under CrossHair); anything outside stands for ``universe``, the
    canonical absent key. The identity on concrete ints in range."""
    for key in range(universe):
        if index == key:
            return key
    return universe


def decode_state(n_idle: int, busy: Sequence[int], capacity: int) -> State:
    """The model state the values stand for (module docstring)."""
    refs = {key: IDLE for key in range(n_idle)}
    for offset, ref in enumerate(busy):
        refs[n_idle + offset] = ref
    return State(refs, list(range(n_idle)), capacity)


def decode(
    op: str, n_idle: int, busy: Sequence[int], capacity: int, args: Sequence[Any]
) -> tuple[State, tuple[Any, ...]]:
    """The state and the operation's model arguments (keys concrete)."""
    state = decode_state(n_idle, busy, capacity)
    universe = len(state.refs) + 1
    if op in ("get", "remove", "mark_evictable", "mark_non_evictable"):
        return state, (concrete(args[0], universe),)
    if op == "insert":
        return state, (concrete(args[0], universe), args[1])
    if op == "touch":
        return state, (tuple(concrete(k, universe) for k in args[0]),)
    if op == "evict":
        return state, (args[0], frozenset(concrete(k, universe) for k in args[1]))
    if op == "clear":
        return state, ()
    raise ValueError(f"unknown operation {op!r}")


def legal(op: str, n_idle: int, busy: list[int], capacity: int, *args: Any) -> bool:
    """The precondition of a refinement obligation: a bounded pre-state the
    manager can leave, and arguments the caller contract allows."""
    present = n_idle + len(busy)
    if not (n_idle >= 0 and present <= MAX_KEYS and present <= capacity <= MAX_KEYS + 1):
        return False
    named = args[0] if op == "touch" else args[1] if op == "evict" else args[:1]
    if len(named) > MAX_LIST or not all(0 <= key <= present for key in named):
        return False  # key ``present`` is the canonical absent key
    if op == "evict" and not all(named[i] < named[i + 1] for i in range(len(named) - 1)):
        return False  # protected is a set: list each one once, in increasing order
    if op == "mark_evictable":
        # One busy key is at ref_cnt 0: the one about to be marked.
        key = concrete(args[0], present + 1)
        if not n_idle <= key < present or busy[key - n_idle] != IDLE:
            return False
        return all(_busy(ref) for ref in busy[: key - n_idle]) and all(
            _busy(ref) for ref in busy[key - n_idle + 1 :]
        )
    if not all(_busy(ref) for ref in busy):
        return False
    if op in ("get", "touch", "clear"):
        return True
    state, model_args = decode(op, n_idle, busy, capacity, args)
    if op == "insert":
        return pre.can_insert(state, *model_args)
    if op == "remove":
        return pre.can_remove(state, *model_args)
    if op == "mark_non_evictable":
        return pre.can_mark_non_evictable(state, *model_args)
    if op == "evict":
        return pre.can_evict(state, *model_args) and model_args[0] <= present + 1
    raise ValueError(f"unknown operation {op!r}")


def _busy(ref: int) -> bool:
    return ref == IN_FLIGHT or IDLE < ref <= MAX_REF
