"""The history format (spec/history.md): schema ``policyspec-history/1``.

A history is JSON Lines: a header object, then one JSON array per policy
call (and a few markers). Calls are arrays of integers whose first element
is the operation's code (``OPS``): the guard writes such a record's text
itself from cached pieces (``history.texts``), a list of them prints as
JSON with ``repr`` (``encode_lines``), and many lines parse in one
``json.loads``. Only rare records carry text (an exception's type name, a
thread's name, a result that is not a list); those are JSON-encoded with
their spaces escaped (``dumps_record``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Final

from policyspec.version import SPEC_VERSION, __version__

__all__ = [
    "ACCESS",
    "CALL_OPS",
    "CLEAR",
    "EVICT",
    "FINISH",
    "FORGET",
    "GET",
    "HOOK_OPS",
    "INSERT",
    "MARKERS",
    "MARK_EVICTABLE",
    "MARK_NON_EVICTABLE",
    "NO_CHUNK",
    "OPS",
    "POSITIONS",
    "RAISED",
    "REMOVE",
    "SCHEMA",
    "STORE_MISS",
    "THREAD",
    "TOUCH",
    "HistoryError",
    "dumps_record",
    "encode_lines",
    "header",
    "op_name",
]

SCHEMA: Final = "policyspec-history/1"
"""The schema name every header carries; its number is the major version
(spec/history.md, "Versions of the format")."""

GET: Final = 0
INSERT: Final = 1
REMOVE: Final = 2
TOUCH: Final = 3
EVICT: Final = 4
CLEAR: Final = 5
MARK_EVICTABLE: Final = 6
MARK_NON_EVICTABLE: Final = 7
STORE_MISS: Final = 8
ACCESS: Final = 9
FINISH: Final = 10
THREAD: Final = 11
"""Marker: the calls that follow come from thread ``[11, id]`` (with its
name the first time: ``[11, id, "name"]``)."""
RAISED: Final = 12
"""A call that raised: ``[12, "TypeName", [the call's record]]``."""
FORGET: Final = 13
"""Marker: the recorder forgot the ids of keys that were absent
(``[13, count]``); ids are never reused."""
POSITIONS: Final = 14
"""Marker: the scheduler placed keys of a request (``[14, request, [k,
position, k, position, ...]]``, end-token positions from its ReqContext),
written before the call that first shows them: a caller write, like
``set_positions`` in the model."""

OPS: Final = (
    "get", "insert", "remove", "touch", "evict", "clear", "mark_evictable",
    "mark_non_evictable", "on_store_miss", "on_request_access", "on_request_finished",
    "thread", "raised", "forget", "positions",
)
"""Operation (and marker) names by code; every header lists them."""

CALL_OPS: Final = frozenset({GET, INSERT, REMOVE, TOUCH, EVICT, CLEAR, MARK_EVICTABLE,
                             MARK_NON_EVICTABLE, STORE_MISS, ACCESS, FINISH, RAISED})
"""Records that are policy calls (and count as one call each)."""
MARKERS: Final = frozenset({THREAD, FORGET, POSITIONS})
HOOK_OPS: Final = frozenset({STORE_MISS, ACCESS, FINISH})

NO_CHUNK: Final = -1
"""The chunk id written for an object that is not a chunk (no ``chunk_id``)."""


class HistoryError(ValueError):
    """A file that is not a history this version can read; the message
    names the file and, where it can, the line."""


def op_name(code: int) -> str:
    """The operation name of a record's code (``?N`` for an unknown one)."""
    return OPS[code] if 0 <= code < len(OPS) else f"?{code}"


def header(
    *, capacity: int, target: str, api: str, mode: str, segment: int = 0,
    first_call: int = 0, generation: int = 0, state: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The header object of a history segment (spec/history.md)."""
    found: dict[str, Any] = {
        "schema": SCHEMA,
        "policyspec_version": __version__,
        "spec_version": SPEC_VERSION,
        "target": target,
        "api": api,
        "capacity": capacity,
        "mode": mode,
        "segment": segment,
        "first_call": first_call,
        "generation": generation,
        "ops": list(OPS),
        "state": state or {"keys": [], "idle": []},
    }
    found.update(extra)
    return found


def encode_lines(records: Iterable[Any]) -> str:
    """Records as JSON lines, each ending in a newline. A record of
    integers (lists of them included) prints as JSON through ``repr``; a
    record given as a string is already encoded (``json.dumps``)."""
    text = "\n".join([r if r.__class__ is str else repr(r) for r in records])
    return text.replace(" ", "") + "\n" if text else ""


def dumps_record(record: list[Any]) -> str:
    """A record with text in it, encoded once (rare records only). Spaces
    inside its strings are escaped, so that ``encode_lines`` may drop the
    spaces ``repr`` puts between the items of the other records."""
    return json.dumps(record, separators=(",", ":"), ensure_ascii=True).replace(" ", "\\u0020")
