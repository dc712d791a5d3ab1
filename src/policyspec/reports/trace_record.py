"""A failure's trace as data: the caller actions as JSON objects, with the
victims each evict returned, for the report's ``actions`` field.

The trace (``model.actions``) says what the manager did, not what the
policy answered; under core the victims of an evict are the policy's free
choice, so the keys present after it cannot be read from the trace. They
are observed instead: ``record_actions`` replays the trace once more in the
lockstep harness and writes down what each evict returned. The timeline of
the HTML report (``policyspec.reports.timeline``) is drawn from these records alone,
so a report read back from JSON draws the same picture.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from policyspec.harness import Aborted, CallerContractError, ConformanceFailure, Lockstep
from policyspec.model.actions import Action
from policyspec.profiles import Profile
from policyspec.subject import Subject

__all__ = [
    "COSTLY_TO_REPLAY",
    "OBSERVE_MOST",
    "decode_action",
    "encode_action",
    "observed_victims",
    "record_actions",
]

COSTLY_TO_REPLAY = frozenset({"API-RETURNS", "API-PROCESS-ALIVE"})
OBSERVE_MOST = 1000
"""Longest trace whose victims are recorded with every key observed."""
"""Failures whose replay costs a time limit or a process: not replayed for
the record (their evicts then carry no ``victims``)."""

Victims = list[int] | None
"""The keys an evict returned, in its order, or None when it refused."""


def encode_action(action: Action, victims: Victims | None = None, *, observed: bool = False
                  ) -> dict[str, Any]:
    """One caller action as a JSON object (spec/report.md, ``actions``).
    ``victims`` is written for an evict only when ``observed``."""
    op = action[0]
    record: dict[str, Any] = {"op": op}
    if op == "insert":
        record.update(key=action[1], ref_cnt=action[2])
        if len(action) > 3:
            record["request"] = action[3]  # R9: the storing request
    elif op in ("finish_store", "remove", "start_read", "end_read", "get"):
        record["key"] = action[1]
    elif op == "touch":
        record["keys"] = list(action[1])
    elif op == "evict":
        record.update(n=action[1], protected=sorted(action[2]))
        if observed:
            record["victims"] = victims
    elif op == "set_positions":
        record.update(request=action[1], positions=[list(p) for p in action[2]])
    elif op in ("on_store_miss", "on_request_access"):
        record.update(request=action[1], keys=list(action[2]))
    elif op == "hook":
        record.update(name=action[1], request=action[2], keys=list(action[3]))
    elif op == "on_request_finished":
        record.update(request=action[1], groups=[list(g) for g in action[2]],
                      insertion_only=sorted(action[3]), reused=sorted(action[4]))
    elif op == "clock":
        record["ms"] = action[1]
    elif op != "clear":
        raise ValueError(f"unknown action {op!r}")
    return record


def decode_action(record: dict[str, Any]) -> Action:
    """The caller action of a record written by ``encode_action``. Raises
    ValueError for a record that is not one."""
    op = record.get("op")
    try:
        if op == "insert":
            base = ("insert", int(record["key"]), int(record["ref_cnt"]))
            return (*base, int(record["request"])) if "request" in record else base
        if op in ("finish_store", "remove", "start_read", "end_read", "get"):
            return (op, int(record["key"]))
        if op == "touch":
            return ("touch", tuple(int(k) for k in record["keys"]))
        if op == "evict":
            return ("evict", int(record["n"]), frozenset(int(k) for k in record["protected"]))
        if op == "clear":
            return ("clear",)
        if op == "clock":
            return ("clock", int(record["ms"]))
        if op == "set_positions":
            return (op, int(record["request"]),
                    tuple((int(k), int(p)) for k, p in record["positions"]))
        if op in ("on_store_miss", "on_request_access"):
            return (op, int(record["request"]), tuple(int(k) for k in record["keys"]))
        if op == "hook":
            name = record["name"]
            if not isinstance(name, str) or not name.isidentifier():
                raise ValueError(f"hook name {name!r}")
            return (op, name, int(record["request"]), tuple(int(k) for k in record["keys"]))
        if op == "on_request_finished":
            return (op, int(record["request"]),
                    tuple(tuple(int(k) for k in g) for g in record["groups"]),
                    frozenset(int(k) for k in record["insertion_only"]),
                    frozenset(int(k) for k in record["reused"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"malformed {op} action: {record!r}") from exc
    raise ValueError(f"unknown action {op!r}")


def observed_victims(
    subject: Subject, profile: Profile, capacity: int, trace: Sequence[Action]
) -> dict[int, Victims]:
    """Replay ``trace`` on a fresh policy in lockstep and return, for each
    evict step that ran (by index), the model keys it returned. The replay
    ends at the first MUST failure, which is the trace's last step for a
    minimal trace; an answer that is not a list of known keys is left out
    (the failure's message says what it was)."""
    # A get of every key after every call costs O(keys) per action: the
    # long traces of the size engine are replayed without it.
    harness = Lockstep(subject, profile, capacity, observe=len(trace) <= OBSERVE_MOST)
    seen: dict[int, Victims] = {}
    for index, action in enumerate(trace):
        stop = False
        try:
            harness.apply(action)
        except (ConformanceFailure, CallerContractError, Aborted):
            stop = True  # the failure itself (or a replay that went elsewhere)
        except Exception:  # a record must never fail the report
            stop = True
        if action[0] == "evict":
            readable, victims = _keys_of(harness, harness.last_evict)
            if readable:
                seen[index] = victims
        if stop:
            break
    return seen


def _keys_of(harness: Lockstep, result: object) -> tuple[bool, Victims]:
    """Whether an evict result can be read as model keys, and those keys."""
    if result is None:
        return True, None
    if not isinstance(result, list):
        return False, None
    keys: list[int] = []
    for item in result:
        if not (isinstance(item, tuple) and len(item) == 2):
            return False, None
        key = harness.model_key(item[0])
        if key is None:
            return False, None
        keys.append(key)
    return True, keys


def record_actions(
    subject: Subject,
    profile: Profile,
    capacity: int,
    trace: Sequence[Action],
    requirement: str,
    *,
    replay: bool = True,
) -> list[dict[str, Any]]:
    """The report's ``actions`` for a failure of ``requirement`` shown by
    ``trace``: each action encoded, each evict with the victims observed in
    one more replay (skipped when ``replay`` is false, e.g. after an
    interruption, and for failures that are costly to replay)."""
    seen: dict[int, Victims] = {}
    if replay and trace and requirement not in COSTLY_TO_REPLAY:
        seen = observed_victims(subject, profile, capacity, trace)
    return [encode_action(a, seen.get(i), observed=i in seen) for i, a in enumerate(trace)]
