"""``policyspec.guard``: a ``CachePolicy`` that vLLM loads by module path
and that wraps the policy one really wants to run, recording every call
(spec/history.md) and, in ``check`` mode, judging the cheap MUST clauses of
core online.

vLLM 0.33 loads it with ``cache_policy="GuardPolicy"`` and
``cache_policy_module_path="policyspec.guard"`` (the offloading connector's
extra config keys ``eviction_policy`` / ``cache_policy_module_path``). The
guard is configured by environment variables, because vLLM builds the
policy as ``cls(cache_capacity=n)`` and passes nothing else:

* ``POLICYSPEC_GUARD_TARGET``: the wrapped policy, ``module:Class`` or
  ``path/to/file.py:Class`` (required);
* ``POLICYSPEC_GUARD_MODE``: ``record`` (default) or ``check``;
* ``POLICYSPEC_GUARD_HISTORY``: the history file (default
  ``policyspec-history.jsonl``; a ``{pid}`` in it is replaced);
* ``POLICYSPEC_GUARD_ON_VIOLATION``: ``log`` (default) or ``raise``;
* ``POLICYSPEC_GUARD_MAX_BYTES`` / ``POLICYSPEC_GUARD_SEGMENTS``: the size
  of a segment and how many are kept (rotation).

The guard never changes what the wrapped policy returns or raises: it reads
the results (never consumes an iterator: a result that is not a list is
recorded by its type) and passes them on. In ``raise`` mode it raises
``GuardViolation`` after the call, when the call broke a rule.

A hook the wrapped policy inherits from vLLM's base class (or has not at
all, a policy of an older revision) is carried out as the base class does
(``on_store_miss`` and ``on_request_finished`` touch) and both the hook and
the calls it makes are recorded, so that the history shows what the policy
saw. Presence is judged at the manager's own ``get`` calls: the guard makes
no call of its own, which could move the policy's state.
"""

from __future__ import annotations

import atexit
import importlib
import importlib.util
import inspect
import logging
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from policyspec.history import format as fmt
from policyspec.history.core import CoreJudge, Violation
from policyspec.history.writer import DEFAULT_KEEP, DEFAULT_MAX_BYTES, SegmentWriter

__all__ = ["ENV", "GuardPolicy", "GuardViolation", "load_target"]

def _base() -> type:
    """vLLM's ``CachePolicy`` when vLLM is installed (its manager asserts
    ``issubclass(cls, CachePolicy)``), else the stand-in of it."""
    try:
        module = importlib.import_module("vllm.v1.kv_offload.cpu.policies.base")
    except ImportError:
        from policyspec.adapters.standins.policies import CachePolicy

        return CachePolicy
    found: type = module.CachePolicy
    return found


_Base = _base()

log = logging.getLogger("policyspec.guard")

ENV = {
    "target": "POLICYSPEC_GUARD_TARGET",
    "mode": "POLICYSPEC_GUARD_MODE",
    "history": "POLICYSPEC_GUARD_HISTORY",
    "on_violation": "POLICYSPEC_GUARD_ON_VIOLATION",
    "max_bytes": "POLICYSPEC_GUARD_MAX_BYTES",
    "segments": "POLICYSPEC_GUARD_SEGMENTS",
}
"""The environment variables the guard reads (module doc)."""

_get_ident = threading.get_ident
_BUFFER = 8192
"""Records held before they are encoded and written."""
_FORGET_AT = 1 << 20
"""Key ids held before the ids of absent keys are forgotten."""
NO_REF = -9
"""``ref_cnt`` recorded for a result that has none (not a chunk at all)."""
NOT_SAME = -2
"""Chunk id recorded for a chunk that is not the very object inserted under
its key (a copy): the judge reads it as a wrong identity."""


class GuardViolation(AssertionError):
    """Raised in ``raise`` mode after a call that broke a rule."""

    def __init__(self, violation: Violation) -> None:
        super().__init__(_text(violation))
        self.violation = violation


def _text(v: Violation) -> str:
    kind = "caller contract" if v.kind == "caller" else "policy"
    return f"{v.requirement} at call {v.call:,} ({kind}): {v.message}"


def load_target(text: str) -> type:
    """The class ``module:Class`` or ``file.py:Class`` names (vLLM stand-ins
    are provided while importing when vLLM is not installed)."""
    from policyspec.adapters.target import import_target, parse_target

    target = parse_target(text)
    if importlib.util.find_spec("vllm") is None:
        from policyspec.adapters import installed

        with installed():
            module = import_target(target)
    else:
        module = import_target(target)
    cls = getattr(module, target.attr, None)
    if not isinstance(cls, type):
        raise ValueError(f"{text}: {target.attr} is not a class")
    return cls


def _takes(method: Callable[..., Any], count: int) -> bool:
    """Whether a bound method accepts ``count`` positional arguments."""
    try:
        params = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return True
    positional = 0
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            return True
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            positional += 1
    return positional >= count


def _own(policy: object, name: str) -> bool:
    """Whether the policy's class defines hook ``name`` itself (not vLLM's
    base class, nor a stand-in of it)."""
    for klass in type(policy).__mro__:
        if name in klass.__dict__:
            home = klass.__module__
            return not (klass.__name__ == "CachePolicy" and (
                home.startswith("vllm.") or home.startswith("policyspec.adapters")))
    return False


def _chunk_id(chunk: Any) -> int:
    try:
        return int(chunk.chunk_id)
    except (AttributeError, TypeError, ValueError):
        try:
            return int(chunk.block_id)
        except (AttributeError, TypeError, ValueError):
            return fmt.NO_CHUNK


class GuardPolicy(_Base):  # type: ignore[misc,valid-type]
    """The guard (module doc). ``target``, ``mode``, ``history``,
    ``on_violation`` default to the environment (``ENV``)."""

    def __init__(
        self,
        cache_capacity: int,
        *,
        target: str | type | None = None,
        mode: str | None = None,
        history: str | os.PathLike[str] | None = None,
        on_violation: str | None = None,
        max_bytes: int | None = None,
        segments: int | None = None,
    ) -> None:
        env = os.environ.get
        self.cache_capacity = cache_capacity
        target = target or env(ENV["target"])
        if not target:
            raise ValueError(f"policyspec.guard: set {ENV['target']} to module:Class or "
                             "file.py:Class")
        cls = load_target(target) if isinstance(target, str) else target
        self.target_name = target if isinstance(target, str) else f"{cls.__module__}:" \
            f"{cls.__qualname__}"
        self.mode = mode or env(ENV["mode"], "record")
        if self.mode not in ("record", "check"):
            raise ValueError(f"policyspec.guard: mode must be record or check, not {self.mode!r}")
        self.on_violation = on_violation or env(ENV["on_violation"], "log")
        if self.on_violation not in ("log", "raise"):
            raise ValueError("policyspec.guard: on_violation must be log or raise, not "
                             f"{self.on_violation!r}")
        path = str(history or env(ENV["history"], "policyspec-history.jsonl"))
        self.path = Path(path.replace("{pid}", str(os.getpid())))
        self.policy = cls(cache_capacity=cache_capacity)
        p = self.policy
        self._get = p.get
        self._remove = p.remove
        self._evict = p.evict
        self._clear = getattr(p, "clear", None)
        self._mark_e = getattr(p, "mark_evictable", None)
        self._mark_ne = getattr(p, "mark_non_evictable", None)
        self._insert_ctx = _takes(p.insert, 3)
        self._touch_ctx = _takes(p.touch, 2)
        self._hooks = {name: getattr(p, name) for name in (
            "on_store_miss", "on_request_access", "on_request_finished") if _own(p, name)}
        self._ids: dict[Any, int] = {}
        self._next_id = 0
        self._requests: dict[Any, int] = {}
        """Request ids by ``req_id``, for the whole history (a request that
        runs across a reset keeps its number, as the model keeps its
        positions)."""
        self._next_request = 0
        self._held: dict[int, Any] = {}
        """Present keys' chunks, as the guard saw them inserted."""
        self._cids: dict[int, int] = {}
        self._idle: dict[int, None] = {}
        """Idle keys in the seed LRU's order (for a segment header's state)."""
        self._pinned: set[int] = set()
        self._positions: dict[int, dict[int, int]] = {}
        """Per request, the key positions already written (``POSITIONS``)."""
        self._calls = 0
        self._markers = 0
        self.generation = 0
        self.violations: list[Violation] = []
        self._buffer: list[Any] = []
        self._flushed = 0
        self._broken = False
        self._thread = threading.get_ident()
        self._threads: dict[int, int] = {self._thread: 0}
        self._lock = threading.Lock()
        self._online = self.mode == "check"
        self.judge = CoreJudge(cache_capacity, ordered=True, sink=self._violation)
        """Judges every call online in check mode; idle in record mode (its
        work would double the guard's cost: the guard's own few maps give
        the headers' state)."""
        self.writer = SegmentWriter(
            self.path, self._header,
            max_bytes=max_bytes or int(env(ENV["max_bytes"], str(DEFAULT_MAX_BYTES))),
            keep=segments or int(env(ENV["segments"], str(DEFAULT_KEEP))),
        )
        self._write_header_now()
        _open_guards.add(self)

    # -- the history -----------------------------------------------------------

    def _header(self, segment: int) -> dict[str, Any]:
        flat: list[int] = []
        idle, pinned, cids = self._idle, self._pinned, self._cids
        for k in self._held:
            flat += (k, cids[k], 0 if k in idle else (1 if k in pinned else -1))
        return fmt.header(
            capacity=self.cache_capacity, target=self.target_name, api="R9",
            mode=self.mode, segment=segment, first_call=self._calls,
            generation=self.generation, state={"keys": flat, "idle": list(idle)},
            thread=self._threads.get(self._thread, 0),
        )

    def _write_header_now(self) -> None:
        self.writer.write("")

    def _emit(self, record: list[Any], encoded: str | None = None) -> None:
        """Buffer one record (``encoded``: its text, for the rare records
        with strings in them) and, in check mode, judge it at once."""
        if _get_ident() != self._thread:
            self._switch(_get_ident())
        buffer = self._buffer
        buffer.append(record if encoded is None else encoded)
        if self._online:
            try:
                self.judge.feed_one(record)
            except GuardViolation:
                raise
            except Exception:  # the judge's own failure must not fail the caller
                log.exception("policyspec.guard: the online judge failed at call %d; "
                              "judging stops, recording goes on", self.judge.call)
                self._online = False
        if len(buffer) >= _BUFFER:
            self.flush()

    def _text(self, text: str) -> None:
        """Buffer a record already encoded (record mode, same thread)."""
        buffer = self._buffer
        buffer.append(text)
        if len(buffer) >= _BUFFER:
            self.flush()

    def _switch(self, t: int) -> None:
        self._thread = t
        number = self._threads.get(t)
        if number is None:
            number = self._threads[t] = len(self._threads)
            name = threading.current_thread().name
            self._buffer.append(fmt.dumps_record([fmt.THREAD, number, name]))
        else:
            self._buffer.append([fmt.THREAD, number])
        self._markers += 1

    def flush(self) -> None:
        """Write the buffered records (a segment that fills up rotates
        here, its successor's header made from the guard's maps)."""
        with self._lock:
            buffer, self._buffer = self._buffer, []
            if not buffer:
                return
            self._flushed += len(buffer)
            self._calls += len(buffer) - self._markers
            self._markers = 0
            if self._broken:
                return
            try:
                self.writer.write(fmt.encode_lines(buffer))
            except (OSError, ValueError) as exc:  # a full disk must not fail the caller
                self._broken = True
                log.error("policyspec.guard: cannot write %s (%s); recording stops, the "
                          "policy runs on", self.path, exc)

    @property
    def calls(self) -> int:
        """Policy calls so far (records that are not markers)."""
        return self._calls + len(self._buffer) - self._markers

    @property
    def recorded(self) -> int:
        """Records so far (calls and markers)."""
        return self._flushed + len(self._buffer)

    def close(self) -> None:
        """Flush and close the history (also run at interpreter exit)."""
        self.flush()
        try:
            self.writer.close()
        except OSError as exc:
            log.error("policyspec.guard: cannot close %s (%s)", self.path, exc)
        _open_guards.discard(self)

    def _violation(self, violation: Violation) -> None:
        if not self._online or violation.profile != "core" or (
                violation.requirement in _SHOULD):
            return  # online: core's MUSTs and the caller contract only
        self.violations.append(violation)
        log.error("policyspec.guard: %s", _text(violation))
        if self.on_violation == "raise":
            raise GuardViolation(violation)

    # -- ids -------------------------------------------------------------------

    def _id(self, key: Any) -> int:
        k = self._ids.get(key)
        if k is None:
            k = self._ids[key] = self._next_id
            self._next_id += 1
            if len(self._ids) > _FORGET_AT:
                self._forget()
        return k

    def _forget(self) -> None:
        held = self._held
        before = len(self._ids)
        self._ids = {key: k for key, k in self._ids.items() if k in held}
        self._buffer.append([fmt.FORGET, before - len(self._ids)])
        self._markers += 1

    def _request(self, ctx: Any) -> int:
        name = getattr(ctx, "req_id", None)
        if name is None:
            return -1
        r = self._requests.get(name)
        if r is None:
            r = self._requests[name] = self._next_request
            self._next_request += 1
            if len(self._requests) > _FORGET_AT:  # the oldest requests are long finished
                for old in list(self._requests)[:_FORGET_AT // 2]:
                    del self._requests[old]
        return r

    def _place(self, r: int, keys: Iterable[Any], ctx: Any) -> None:
        """Write the positions the scheduler gave ``keys`` in request ``r``
        that the history does not hold yet (a ``POSITIONS`` marker)."""
        where = getattr(ctx, "get_offload_key_position", None)
        if where is None:
            return
        known = self._positions.get(r)
        if known is None:
            known = self._positions[r] = {}
        new: list[int] = []
        ids = self._ids
        for key in keys:
            k = ids[key] if key in ids else self._id(key)
            if k in known:
                continue  # the scheduler places a key once per request
            position = where(key)
            if position is not None:
                known[k] = position
                new += (k, position)
        if new:
            self._buffer.append([fmt.POSITIONS, r, new])
            self._markers += 1

    def _raised(self, exc: BaseException, record: list[Any]) -> None:
        raised = [fmt.RAISED, type(exc).__name__, record]
        self._emit(raised, fmt.dumps_record(raised))

    # -- the policy calls --------------------------------------------------------

    def get(self, key: Any) -> Any:
        # The hottest call (about half of the manager's): _emit inlined.
        k = self._ids.get(key)
        if k is None:
            k = self._id(key)
        try:
            chunk: Any = self._get(key)
        except BaseException as exc:
            self._raised(exc, [fmt.GET, k])
            raise
        if chunk is None:
            cid = ref = None
        else:
            held: Any = self._held.get(k)
            cid = self._cids[k] if held is chunk else (
                NOT_SAME if held is not None else _chunk_id(chunk))
            ref = chunk.ref_cnt if held is chunk else getattr(chunk, "ref_cnt", NO_REF)
        if _get_ident() != self._thread or self._online:
            self._emit([0, k] if cid is None else [0, k, cid, ref])
            return chunk
        # Record mode on the same thread: the record's text at once (an
        # f-string costs half of a list and its repr at flush).
        buffer = self._buffer
        buffer.append(f"[0,{k}]" if cid is None else f"[0,{k},{cid},{ref}]")
        if len(buffer) >= _BUFFER:
            self.flush()
        return chunk

    def insert(self, key: Any, chunk: Any, req_context: Any = None) -> None:
        k = self._ids.get(key)
        if k is None:
            k = self._id(key)
        r = -1
        if req_context is not None:
            r = self._request(req_context)
            self._place(r, (key,), req_context)
        cid = _chunk_id(chunk)
        ref = chunk.ref_cnt
        record = [fmt.INSERT, k, cid, ref, r, self.generation]
        try:
            if self._insert_ctx:
                self.policy.insert(key, chunk, req_context)
            else:
                self.policy.insert(key, chunk)
        except BaseException as exc:
            self._raised(exc, record)
            raise
        self._held[k] = chunk
        self._cids[k] = cid
        if ref == 0:
            self._idle[k] = None
        if chunk.ref_cnt != ref:
            record.append(chunk.ref_cnt)  # the policy wrote ref_cnt
            self._emit(record)
        elif self._online or _get_ident() != self._thread:
            self._emit(record)
        else:
            self._text(f"[1,{k},{cid},{ref},{r},{self.generation}]")

    def _gone(self, k: int) -> None:
        if self._held.pop(k, None) is not None:
            del self._cids[k]
            self._idle.pop(k, None)
            self._pinned.discard(k)

    def remove(self, key: Any) -> None:
        k = self._id(key)
        try:
            self._remove(key)
        except BaseException as exc:
            self._raised(exc, [fmt.REMOVE, k])
            raise
        self._gone(k)
        self._emit([fmt.REMOVE, k])

    def touch(self, keys: Iterable[Any], req_context: Any = None) -> None:
        keys = keys if isinstance(keys, list | tuple) else list(keys)
        ids = self._ids
        touched = [ids[key] if key in ids else self._id(key) for key in keys]
        record = [fmt.TOUCH, touched]
        try:
            if self._touch_ctx:
                self.policy.touch(keys, req_context)
            else:
                self.policy.touch(keys)
        except BaseException as exc:
            self._raised(exc, record)
            raise
        idle = self._idle
        if idle:
            for k in reversed(touched):
                if k in idle:
                    del idle[k]
                    idle[k] = None
        self._emit(record)

    def evict(self, n: int, protected: Any) -> Any:
        ids = self._ids
        shut = [ids[key] if key in ids else self._id(key) for key in protected]
        try:
            result = self._evict(n, protected)
        except BaseException as exc:
            self._raised(exc, [fmt.EVICT, n, shut])
            raise
        if result is None:
            self._emit([fmt.EVICT, n, shut])
            return result
        flat: list[int] | str
        if result.__class__ is list or result.__class__ is tuple:
            flat = []
            held, cids = self._held, self._cids
            try:
                for key, chunk in result:
                    k = self._id(key)
                    h = held.get(k)
                    flat += (k, cids[k] if h is chunk else (
                        _chunk_id(chunk) if h is None else NOT_SAME), chunk.ref_cnt)
                    self._gone(k)
            except (TypeError, ValueError, AttributeError):
                flat = f"a {type(result).__name__} whose items are not (key, chunk) pairs"
        else:
            flat = f"a {type(result).__name__}"
        record = [fmt.EVICT, n, shut, flat]
        self._emit(record, fmt.dumps_record(record) if flat.__class__ is str else None)
        return result

    def clear(self) -> None:
        try:
            if self._clear is not None:
                self._clear()
        except BaseException as exc:
            self._raised(exc, [fmt.CLEAR])
            raise
        for table in (self._held, self._cids, self._idle, self._pinned, self._positions):
            table.clear()
        self.generation += 1
        self._emit([fmt.CLEAR])

    def mark_evictable(self, key: Any) -> None:
        k = self._ids.get(key)
        if k is None:
            k = self._id(key)
        try:
            if self._mark_e is not None:
                self._mark_e(key)
        except BaseException as exc:
            self._raised(exc, [fmt.MARK_EVICTABLE, k])
            raise
        held = self._held.get(k)
        if held is None:
            self._emit([fmt.MARK_EVICTABLE, k])
            return
        idle = self._idle
        if k not in idle:  # an idle key keeps its place (the caller breaks C3)
            idle[k] = None
            self._pinned.discard(k)
        if self._online or _get_ident() != self._thread:
            self._emit([fmt.MARK_EVICTABLE, k, held.ref_cnt])
        else:
            self._text(f"[6,{k},{held.ref_cnt}]")

    def mark_non_evictable(self, key: Any) -> None:
        k = self._ids.get(key)
        if k is None:
            k = self._id(key)
        try:
            if self._mark_ne is not None:
                self._mark_ne(key)
        except BaseException as exc:
            self._raised(exc, [fmt.MARK_NON_EVICTABLE, k])
            raise
        held = self._held.get(k)
        if held is None:
            self._emit([fmt.MARK_NON_EVICTABLE, k])
            return
        if self._idle.pop(k, 0) is None:
            self._pinned.add(k)
        if self._online or _get_ident() != self._thread:
            self._emit([fmt.MARK_NON_EVICTABLE, k, held.ref_cnt])
        else:
            self._text(f"[7,{k},{held.ref_cnt}]")

    # -- the request hooks (vLLM 0.33) -------------------------------------------

    def _hook(self, op: int, name: str, args: Sequence[Any], record: list[Any],
              default: Callable[[], None] | None) -> None:
        own = self._hooks.get(name)
        try:
            if own is not None:
                own(*args)
        except BaseException as exc:
            self._raised(exc, record)
            raise
        self._emit(record)
        if own is None and default is not None:
            default()

    def on_store_miss(self, keys: Iterable[Any], req_context: Any) -> None:
        keys = keys if isinstance(keys, list | tuple) else list(keys)
        r = self._request(req_context)
        self._place(r, keys, req_context)
        ids = self._ids
        record = [fmt.STORE_MISS, r, self.generation,
                  [ids[key] if key in ids else self._id(key) for key in keys]]
        self._hook(fmt.STORE_MISS, "on_store_miss", (keys, req_context), record,
                   lambda: self.touch(keys, req_context))

    def on_request_access(self, keys: Iterable[Any], req_context: Any) -> None:
        keys = keys if isinstance(keys, list | tuple) else list(keys)
        r = self._request(req_context)
        self._place(r, keys, req_context)
        ids = self._ids
        record = [fmt.ACCESS, r, self.generation,
                  [ids[key] if key in ids else self._id(key) for key in keys]]
        self._hook(fmt.ACCESS, "on_request_access", (keys, req_context), record, None)

    def on_request_finished(self, key_groups: Sequence[Sequence[Any]],
                            insertion_only_keys: Any, reused_keys: Any,
                            req_context: Any) -> None:
        i = self._id
        r = self._request(req_context)
        for group in key_groups:
            self._place(r, group, req_context)
        record = [fmt.FINISH, r, self.generation,
                  [[i(key) for key in group] for group in key_groups],
                  [i(key) for key in insertion_only_keys], [i(key) for key in reused_keys]]

        def default() -> None:
            for group in key_groups:
                self.touch(group, req_context)

        self._hook(fmt.FINISH, "on_request_finished",
                   (key_groups, insertion_only_keys, reused_keys, req_context), record, default)
        self._positions.pop(r, None)


def _should_ids() -> frozenset[str]:
    from policyspec.registry import load_registry

    return frozenset(rid for rid, r in load_registry().items() if r.level == "SHOULD")


_SHOULD = _should_ids()
_open_guards: weakref.WeakSet[GuardPolicy] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for guard in list(_open_guards):
        try:
            guard.close()
        except Exception:
            log.exception("policyspec.guard: could not close %s", guard.path)
