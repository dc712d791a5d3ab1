"""A recording proxy for a vLLM 0.33.0 (R9) cache policy: every call a
manager makes, written down in a form two runs can be compared by.

``RecordingPolicy(policy, names)`` forwards each R9 method to ``policy``
and appends one ``Call`` to ``calls``: the operation, the calling thread's
name, each argument (keys as small ids from ``KeyNames``, in first-seen
order; containers with their type name, sets sorted; a request context as
its ``req_id``) and the result (a chunk as its id and ``ref_cnt``; an
exception as its type name). Arguments that are one-shot iterators are
read into the record and handed on as a fresh generator of the same items.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["Call", "KeyNames", "RecordingPolicy", "first_difference"]


class KeyNames:
    """Small stable ids for keys, in the order they are first met."""

    def __init__(self) -> None:
        self._ids: dict[Any, int] = {}

    def __call__(self, key: Any) -> int:
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self._ids)
        return found


@dataclass(frozen=True)
class Call:
    op: str
    thread: str
    args: tuple[Any, ...]
    result: Any

    def __str__(self) -> str:
        args = ", ".join(map(repr, self.args))
        return f"[{self.thread}] {self.op}({args}) -> {self.result!r}"


def first_difference(left: list[Call], right: list[Call]) -> int | None:
    """Index of the first call where two records differ (a missing call
    counts), or None when they are equal."""
    for index, (a, b) in enumerate(zip(left, right, strict=False)):
        if a != b:
            return index
    return None if len(left) == len(right) else min(len(left), len(right))


class RecordingPolicy:
    """The policy behind a recording (module doc)."""

    def __init__(
        self,
        policy: Any,
        names: KeyNames | None = None,
        sink: Callable[[Call], None] | None = None,
    ) -> None:
        self.policy = policy
        self.names = names if names is not None else KeyNames()
        self.calls: list[Call] = []
        self.sink = sink
        """Told of each call too (to interleave it with other records)."""

    @property
    def cache_capacity(self) -> Any:
        return self.policy.cache_capacity

    # -- how things are written down ----------------------------------------------

    def _keys(self, keys: Any) -> tuple[Any, Iterable[Any]]:
        """(record, what to pass on) for a key container."""
        kind = type(keys).__name__
        if isinstance(keys, Iterator):
            items = list(keys)
            return (kind, tuple(map(self.names, items))), (k for k in items)
        ids = tuple(map(self.names, keys))
        if isinstance(keys, set | frozenset):
            ids = tuple(sorted(ids))
        return (kind, ids), keys

    def _groups(self, groups: Any) -> Any:
        return (type(groups).__name__, tuple(self._keys(g)[0] for g in groups))

    @staticmethod
    def _chunk(chunk: Any) -> Any:
        if chunk is None:
            return None
        return ("chunk", int(chunk.chunk_id), int(chunk.ref_cnt))

    @staticmethod
    def _context(req_context: Any) -> Any:
        return ("ctx", getattr(req_context, "req_id", repr(req_context)))

    def _call(self, op: str, args: tuple[Any, ...], fn: Any, *real: Any) -> Any:
        thread = threading.current_thread().name
        try:
            result = fn(*real)
        except Exception as exc:
            self._record(Call(op, thread, args, ("raise", type(exc).__name__)))
            raise
        shown = result
        if op == "get":
            shown = self._chunk(result)
        elif op == "evict" and result is not None:
            shown = (
                type(result).__name__,
                tuple((self.names(k), self._chunk(c)) for k, c in result),
            )
        self._record(Call(op, thread, args, shown))
        return result

    def _record(self, call: Call) -> None:
        self.calls.append(call)
        if self.sink is not None:
            self.sink(call)

    # -- the R9 methods -------------------------------------------------------

    def get(self, key: Any) -> Any:
        return self._call("get", (self.names(key),), self.policy.get, key)

    def insert(self, key: Any, chunk: Any, req_context: Any) -> None:
        args = (self.names(key), self._chunk(chunk), self._context(req_context))
        self._call("insert", args, self.policy.insert, key, chunk, req_context)

    def remove(self, key: Any) -> None:
        self._call("remove", (self.names(key),), self.policy.remove, key)

    def touch(self, keys: Iterable[Any], req_context: Any) -> None:
        shown, keys = self._keys(keys)
        self._call("touch", (shown, self._context(req_context)), self.policy.touch, keys,
                   req_context)

    def evict(self, n: int, protected: set[Any]) -> Any:
        shown, _ = self._keys(protected)
        return self._call("evict", (n, shown), self.policy.evict, n, protected)

    def clear(self) -> None:
        self._call("clear", (), self.policy.clear)

    def mark_evictable(self, key: Any) -> None:
        self._call("mark_evictable", (self.names(key),), self.policy.mark_evictable, key)

    def mark_non_evictable(self, key: Any) -> None:
        self._call(
            "mark_non_evictable", (self.names(key),), self.policy.mark_non_evictable, key
        )

    def on_store_miss(self, keys: Iterable[Any], req_context: Any) -> None:
        shown, keys = self._keys(keys)
        self._call("on_store_miss", (shown, self._context(req_context)),
                   self.policy.on_store_miss, keys, req_context)

    def on_request_access(self, keys: Iterable[Any], req_context: Any) -> None:
        shown, keys = self._keys(keys)
        self._call("on_request_access", (shown, self._context(req_context)),
                   self.policy.on_request_access, keys, req_context)

    def on_request_finished(
        self,
        key_groups: Any,
        insertion_only_keys: set[Any],
        reused_keys: set[Any],
        req_context: Any,
    ) -> None:
        args = (
            self._groups(key_groups),
            self._keys(insertion_only_keys)[0],
            self._keys(reused_keys)[0],
            self._context(req_context),
        )
        self._call("on_request_finished", args, self.policy.on_request_finished,
                   key_groups, insertion_only_keys, reused_keys, req_context)
