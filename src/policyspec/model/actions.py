"""Caller actions: what vLLM's manager does to a policy in one step.

An action is a small tuple (cheap to make, hash and print). Each expands
into the policy calls and ref_cnt writes the manager makes, in order
(spec/sources.md, C1-C12). ``is_legal`` is the caller contract at the level of actions:
it only asks the precondition predicates, so every engine that generates
actions stays inside the contract by construction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from policyspec.model.preconditions import (
    can_clear,
    can_end_read,
    can_evict,
    can_finish_store,
    can_get,
    can_insert,
    can_remove,
    can_start_read,
    can_touch,
)
from policyspec.model.request import (
    Requests,
    can_access,
    can_finish,
    can_observe,
    can_store_miss,
)
from policyspec.model.state import IDLE, IN_FLIGHT, State

__all__ = [
    "ACTION_NAMES",
    "REQUEST_ACTIONS",
    "Action",
    "Primitive",
    "by_manager",
    "expand",
    "is_legal",
    "request_of",
]

Action = tuple[Any, ...]
"""("insert", key, ref_cnt) | ("finish_store", key) | ("remove", key) |
("start_read", key) | ("end_read", key) | ("touch", keys_tuple) |
("evict", n, protected_frozenset) | ("get", key) | ("clear",); and the
request level (model/request.py), each its own call: ("set_positions", r,
((key, position), ...)), ("insert", key, ref_cnt, r), ("on_store_miss", r,
keys_tuple), ("on_request_access", r, keys_tuple), ("on_request_finished",
r, groups, insertion_only, reused), ("hook", name, r, keys_tuple) (an
observation hook a later release adds: ``policy.<name>(keys, req_context)``,
model/request.py ``can_observe``); and time: ("clock", ms), the policy's
clock moves ms milliseconds (ms < 0: the wall clock steps back), always
legal and no call (policyspec.environment; no requirement depends on time)"""

Primitive = tuple[Any, ...]
"""A policy call (``insert``, ``remove``, ``touch``, ``mark_evictable``,
``mark_non_evictable``, ``evict``, ``get``, ``clear``) or a manager write
(``("set_ref", key, ref_cnt)``)."""

ACTION_NAMES = (
    "insert",
    "finish_store",
    "remove",
    "start_read",
    "end_read",
    "touch",
    "evict",
    "get",
    "clear",
)


def is_legal(state: State, action: Action, requests: Requests | None = None) -> bool:
    """Whether the caller contract allows ``action`` in ``state`` (and, for
    the request level, with these ``requests``: none opened by default)."""
    op = action[0]
    if op in REQUEST_ACTIONS:
        return _request_legal(state, requests or Requests(), action)
    if op == "clock":
        return True
    if op == "insert":
        return can_insert(state, action[1], action[2])
    if op == "finish_store":
        return can_finish_store(state, action[1])
    if op == "remove":
        return can_remove(state, action[1])
    if op == "start_read":
        return can_start_read(state, action[1])
    if op == "end_read":
        return can_end_read(state, action[1])
    if op == "touch":
        return can_touch(state, action[1])
    if op == "evict":
        return can_evict(state, action[1], action[2])
    if op == "get":
        return can_get(state, action[1])
    if op == "clear":
        return can_clear(state)
    raise ValueError(f"unknown action {op!r}")


REQUEST_ACTIONS = frozenset({
    "set_positions", "on_store_miss", "on_request_access", "on_request_finished", "hook",
})
"""The request-level actions (0.33's scheduler and hooks, and a later
release's observation hooks): they name a request, not a block, and their
legality asks the open requests."""


def request_of(action: Action) -> int | None:
    """The request a request-level action names (``action[1]``; an
    observation hook's is ``action[2]``, after its name), or the storing
    request of an R9 insert; None for any other action."""
    op = action[0]
    if op == "hook":
        return int(action[2])
    if op in REQUEST_ACTIONS:
        return int(action[1])
    return int(action[3]) if op == "insert" and len(action) > 3 else None


def _request_legal(state: State, requests: Requests, action: Action) -> bool:
    op = action[0]
    if op == "set_positions":
        return True  # the scheduler may place keys at any time
    if op == "on_store_miss":
        return can_store_miss(state, requests, action[1], action[2])
    if op == "on_request_access":
        return can_access(state, requests, action[1], action[2])
    if op == "hook":
        return can_observe(requests, action[2])
    return can_finish(requests, action[1])


def expand(state: State, action: Action) -> Sequence[Primitive]:
    """The manager's calls and writes for ``action`` (legal in ``state``).

    finish_store: ref_cnt -1 -> 0, then mark_evictable (C3a).
    start_read: from 0, mark_non_evictable before the increment (C4).
    end_read: the decrement, then mark_evictable when it reaches 0 (C3b).
    """
    op = action[0]
    if op == "finish_store":
        key = action[1]
        return (("set_ref", key, IDLE), ("mark_evictable", key))
    if op == "start_read":
        key = action[1]
        ref = state.refs[key]
        if ref == IDLE:
            return (("mark_non_evictable", key), ("set_ref", key, ref + 1))
        return (("set_ref", key, ref + 1),)
    if op == "end_read":
        key = action[1]
        ref = state.refs[key] - 1
        if ref == IDLE:
            return (("set_ref", key, ref), ("mark_evictable", key))
        return (("set_ref", key, ref),)
    return (action,)


def by_manager(trace: Sequence[Action]) -> bool:
    """Whether vLLM's manager itself could make this caller-legal trace
    (spec/manager.md): it inserts only blocks in flight, removes only keys
    in flight (a failed store), and calls ``evict(n, protected)`` only with
    1 <= n <= its count of idle blocks (the fast-fail guard skips the rest).
    The policy API allows more; a witness outside this is labelled so."""
    refs: dict[int, int] = {}
    gone = 0
    """Idle keys some evict took: which ones is the policy's choice, so
    they stay in ``refs`` until a later insert of one shows it was gone."""
    for action in trace:
        op = action[0]
        if op == "insert":
            if action[2] != IN_FLIGHT:
                return False
            if refs.get(action[1]) == IDLE:
                gone -= 1
        elif op == "remove" and refs.get(action[1]) != IN_FLIGHT:
            return False
        elif op == "evict":
            idle = sum(1 for r in refs.values() if r == IDLE) - gone
            if not 1 <= action[1] <= idle:
                return False
            gone += action[1]
            continue
        elif op == "clear":
            refs, gone = {}, 0
            continue
        if op in ("finish_store", "start_read", "end_read") and action[1] not in refs:
            return False  # outside the caller contract: no trace of anyone's
        for call in expand(State(dict(refs)), action):
            if call[0] in ("insert", "set_ref"):
                refs[call[1]] = call[2]
            elif call[0] == "remove":
                refs.pop(call[1], None)
    return True
