"""The symbolic pre-state: a model ``State`` and a call from small ints.

CrossHair searches well over plain ints and poorly over containers (a
symbolic key in an ``OrderedDict`` silently explores one value), so every
obligation takes bounded ints, keys are labelled canonically by what the
state says of them (spec/prove.md, "Bounds"), and ``legal`` is
every obligation's precondition. Canonical names lose nothing for a policy
that treats keys as opaque values, which the spec requires.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from functools import cache
from typing import Any

from policyspec.model.request import HOOKS
from policyspec.model.state import IDLE, IN_FLIGHT, State

__all__ = [
    "HISTORY",
    "KINDS",
    "MAX_HOOK_LIST",
    "MAX_KEYS",
    "MAX_LIST",
    "MAX_REF",
    "OPERATIONS",
    "SEED_OPERATIONS",
    "decode",
    "decode_state",
    "legal",
    "legal_values",
    "pack",
    "past_of",
    "unpack",
]

MAX_KEYS = 3
"""Present keys in a symbolic pre-state, at most."""
MAX_LIST = 3
"""Keys named by touch, at most (protected: any subset of the keys)."""
MAX_HOOK_LIST = 2
"""Keys a request hook names, at most: each is a distinct key with an order
(and, for a finish, a kind each), so a third key would multiply the paths
of ``on_request_finished`` by 25."""
MAX_REF = 1
"""ref_cnt of a block being read: a policy sees only that it is above 0,
and each further value would multiply the paths to search."""

SEED_OPERATIONS = (
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
OPERATIONS = (*SEED_OPERATIONS, *HOOKS)
"""Every operation ``prove`` can check: the seed API's and the request
hooks of vLLM 0.33 (R8, R9). Which of them a policy gets is its revision's
(policyspec.prove.operation_bounds)."""
KINDS = (0, 1, 2)
"""How ``on_request_finished`` classifies each key of its group: 0 neither,
1 insertion-only (the request stored it), 2 reused (it read it)."""

_ONE_KEY = ("get", "remove", "mark_evictable", "mark_non_evictable")
HISTORY = ("get", "insert", "touch", "on_store_miss", "on_request_access")
"""The operations whose pre-state has ``past`` (spec/prove.md, "The derived pair"): those
that can name the absent key for what it is (a lookup, a store, a use, a
miss), as the others can only protect, remove or order present keys."""


def decode_state(n_idle: int, n_busy: int, reads: int, capacity: int) -> State:
    """The model state the values stand for (spec/prove.md, "Bounds")."""
    refs = {key: IDLE for key in range(n_idle)}
    for j in range(n_busy):
        refs[n_idle + j] = MAX_REF if reads >> j & 1 else IN_FLIGHT
    return State(refs, list(range(n_idle)), capacity)


def decode(op: str, values: Sequence[int]) -> tuple[State, tuple[Any, ...]]:
    """The state and the operation's model arguments that ``legal`` values
    stand for (``past_of`` says the rest)."""
    n_idle, n_busy, reads, capacity = values[:4]
    args = values[_state_size(op):]
    state = decode_state(n_idle, n_busy, reads, capacity)
    present = n_idle + n_busy
    if op in _ONE_KEY:
        if op == "mark_evictable":  # its load has ended: ref_cnt 0, not idle yet
            state.refs[args[0]] = IDLE
        return state, (args[0],)
    if op == "insert":
        return state, (args[0], args[1])
    if op == "touch":
        return state, (tuple(args[1 : 1 + args[0]]),)
    if op == "evict":
        return state, (args[0], frozenset(k for k in range(present + 1) if args[1] >> k & 1))
    if op == "clear":
        return state, ()
    if op in HOOKS:
        keys = tuple(args[1 : 1 + args[0]])
        if op != "on_request_finished":
            return state, (keys, bool(args[1 + MAX_HOOK_LIST]))
        kinds = args[1 + MAX_HOOK_LIST : 1 + MAX_HOOK_LIST + args[0]]
        only = frozenset(k for k, kind in zip(keys, kinds, strict=True) if kind == 1)
        reused = frozenset(k for k, kind in zip(keys, kinds, strict=True) if kind == 2)
        return state, (keys, only, reused, bool(args[-1]))
    raise ValueError(f"unknown operation {op!r}")


def past_of(op: str, values: Sequence[int]) -> bool:
    """Whether the absent key was stored and evicted before (module
    docstring); False for an operation without ``past``."""
    return op in HISTORY and values[4] == 1


def _state_size(op: str) -> int:
    """How many of an obligation's values describe the pre-state."""
    return 5 if op in HISTORY else 4


def legal(op: str, *values: Any) -> bool:
    """The precondition of an obligation: a bounded pre-state the manager
    can leave, and arguments the caller contract allows (spec/prove.md, "Bounds").
    Comparisons only, linear in the values, so that under CrossHair the
    search is finite and cheap."""
    ranges = _RANGES.get(op)
    if ranges is None:
        raise ValueError(f"unknown operation {op!r}")
    if len(values) != len(ranges) or not all(
        low <= value <= high for value, (low, high) in zip(values, ranges, strict=True)
    ):
        return False
    n_idle, n_busy, reads, capacity = values[:4]
    present = n_idle + n_busy
    if not (present <= MAX_KEYS and _below_power(reads, n_busy)
            and max(present, 1) <= capacity):
        return False
    return bool(_args_legal(op, n_idle, present, reads, capacity, values[_state_size(op):]))


@cache
def legal_values(op: str) -> tuple[tuple[int, ...], ...]:
    """Every legal value of ``op``'s obligation, in ``pack`` order: the
    paths CrossHair runs when it explores them all."""
    ranges = [range(low, high + 1) for low, high in _RANGES[op]]
    size = _state_size(op)
    states = [v for v in itertools.product(*ranges[:size]) if legal("clear", *v[:4])]
    return tuple((*state, *args) for state in states
                 for args in itertools.product(*ranges[size:]) if legal(op, *state, *args))


def pack(op: str, values: Sequence[Any]) -> tuple[Any, Any]:
    """The pre-state's values and the call's as two ints, digit by digit in
    ``_RANGES``: under CrossHair linear expressions, realized once each per
    path, so that each legal value makes one path and no path repeats.
    (Realizing each value on its own made three times the paths and,
    interleaved with the tests, never ended; one int for everything made
    each path test every value tried before it, about 3,000 for evict.)"""
    ranges, size = _RANGES[op], _state_size(op)
    return _digits(values[:size], ranges[:size]), _digits(values[size:], ranges[size:])


def unpack(op: str, state_code: int, args_code: int) -> tuple[int, ...]:
    """The values ``pack`` made the codes of."""
    ranges, size = _RANGES[op], _state_size(op)
    return (*_undigits(state_code, ranges[:size]), *_undigits(args_code, ranges[size:]))


def _digits(values: Sequence[Any], ranges: Sequence[tuple[int, int]]) -> Any:
    code: Any = 0
    for value, (low, high) in zip(values, ranges, strict=True):
        code = code * (high - low + 1) + (value - low)
    return code


def _undigits(code: int, ranges: Sequence[tuple[int, int]]) -> list[int]:
    found = []
    for low, high in reversed(ranges):
        code, digit = divmod(code, high - low + 1)
        found.append(low + digit)
    return found[::-1]


_STATE = ((0, MAX_KEYS), (0, MAX_KEYS), (0, 2**MAX_KEYS - 1), (1, MAX_KEYS + 1))
_PAST = (0, 1)
_KEY = (0, MAX_KEYS)
_HOOK = ((1, MAX_HOOK_LIST), *(_KEY,) * MAX_HOOK_LIST)
_RANGES: dict[str, tuple[tuple[int, int], ...]] = {
    "get": (*_STATE, _PAST, _KEY),
    "remove": (*_STATE, _KEY),
    "mark_evictable": (*_STATE, _KEY),
    "mark_non_evictable": (*_STATE, _KEY),
    "insert": (*_STATE, _PAST, _KEY, (IN_FLIGHT, IDLE)),
    "touch": (*_STATE, _PAST, (0, MAX_LIST), *(_KEY,) * MAX_LIST),
    "evict": (*_STATE, (0, MAX_KEYS + 1), (0, 2 ** (MAX_KEYS + 1) - 1)),
    "clear": _STATE,
    "on_store_miss": (*_STATE, _PAST, *_HOOK, (0, 1)),
    "on_request_access": (*_STATE, _PAST, *_HOOK, (0, 1)),
    "on_request_finished": (*_STATE, *_HOOK, *((0, KINDS[-1]),) * MAX_HOOK_LIST, (0, 1)),
}
"""Every value's range, whatever the others: the pre-state's four (five
with ``past``), then the operation's arguments (spec/prove.md, "Bounds").
``legal`` narrows them."""

_BIT = [tuple(v for v in range(2**MAX_KEYS) if v >> j & 1) for j in range(MAX_KEYS)]
"""The values of ``reads`` whose bit ``j`` is set (busy key ``j`` read)."""


def _below_power(value: Any, exponent: Any) -> bool:
    """``value < 2 ** exponent``, as comparisons the solver takes linearly."""
    return any(exponent == e and value < 2**e for e in range(MAX_KEYS + 2))


def _args_legal(
    op: str, n_idle: Any, present: Any, reads: Any, capacity: Any, args: Sequence[Any]
) -> Any:
    if op in ("get", "clear"):
        return op == "clear" or args[0] <= present  # key ``present``: absent
    if op == "remove":
        return args[0] < present
    if op == "mark_non_evictable":
        return args[0] < n_idle
    if op == "mark_evictable":  # it ends the load of a key being read
        return any(args[0] == n_idle + j and reads in _BIT[j] for j in range(MAX_KEYS))
    if op == "insert":  # the absent key, into a cache with room (C1)
        return args[0] == present and present < capacity
    if op == "evict":
        return args[0] <= present + 1 and _below_power(args[1], present + 1)
    if op == "touch":
        return _keys(args, MAX_LIST, present)
    return _hook_legal(op, present, args)


def _keys(args: Sequence[Any], most: int, present: Any) -> bool:
    """``args[0]`` keys in ``args[1:most+1]``, each in ``0..present``, the
    unused ones 0."""
    count = args[0]
    return all(
        (i < count and key <= present) or (count <= i and key == 0)
        for i, key in enumerate(args[1 : most + 1])
    )


def _hook_legal(op: str, present: Any, args: Sequence[Any]) -> Any:
    """A hook of a fresh request: distinct keys, at least one (0.33's
    manager reports nothing for no keys); a store miss names absent keys
    only (there is one); a finish classifies each key of its one group."""
    if not _keys(args, MAX_HOOK_LIST, present):
        return False
    count, first, second = args[0], args[1], args[2]
    if count == 2 and first == second:
        return False
    if op == "on_store_miss":
        return count == 1 and first == present
    if op == "on_request_finished":
        kinds = args[1 + MAX_HOOK_LIST : 1 + 2 * MAX_HOOK_LIST]
        return all(i < count or kind == 0 for i, kind in enumerate(kinds))
    return True
