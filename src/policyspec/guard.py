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
import functools
import importlib
import importlib.util
import inspect
import itertools
import json
import json.scanner
import logging
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from policyspec.history import format as fmt
from policyspec.history.core import CoreJudge, Violation
from policyspec.history.texts import CLOSED, NUMBERS, TextIds
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
_read: Callable[[str, int], tuple[Any, int]] = json.scanner.make_scanner(
    json.JSONDecoder())  # type: ignore[arg-type]  # typeshed types the context oddly
"""One JSON value at an offset (the C scanner without ``json.loads``'s
checks: the guard reads back only the records it wrote)."""
_BUFFER = 8192
"""Records held before they are written."""
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


def _chunk_text(chunk: Any) -> str:
    """A chunk's id as record text (``_chunk_id``)."""
    try:
        cid = chunk.chunk_id
        if cid.__class__ is int:
            return NUMBERS[cid]
    except AttributeError:
        pass
    return NUMBERS[_chunk_id(chunk)]


def _number(value: Any) -> str:
    """A number's record text (``repr`` of anything else, as JSON would
    not have it: the judge then names the file as unreadable)."""
    try:
        return NUMBERS[value]
    except TypeError:
        return repr(value)


def _string(text: str) -> str:
    """A string as record text: JSON, ASCII, its spaces escaped as format
    1 has always written them (``fmt.dumps_record``)."""
    return json.dumps(text, ensure_ascii=True).replace(" ", "\\u0020")


def _nothing(key: Any) -> None:
    """A notification the wrapped policy does not have."""


@functools.cache
def _plain_position_reads() -> frozenset[Any]:
    """The ``get_offload_key_position`` functions that read their context's
    ``_offload_key_positions`` dict and nothing else: vLLM 0.33's
    ``ReqContext`` and the stand-in of it. For those the guard reads the
    dict itself (a method call per key costs more than the rest of a hook's
    record)."""
    from policyspec.adapters.standins.keys import ReqContext

    found: list[Any] = [ReqContext.get_offload_key_position]
    try:
        module = importlib.import_module("vllm.v1.kv_offload.base")
    except ImportError:
        pass
    else:
        found.append(module.ReqContext.get_offload_key_position)
    return frozenset(found)


_Held = tuple[Any, str, str, str]
_NOT_HELD: _Held = (None, "", "", "")
"""What ``_held`` gives for an absent key (its chunk is no object)."""
_MISSING: Any = object()
"""A value the call could not read (an evicted chunk without ``ref_cnt``,
a key the guard does not hold at a ``mark_*``)."""
_DONE = -1
"""Pending item, not a record: a finished request whose base-class touches
are done (its positions are forgotten)."""

Item = tuple[Any, ...]
"""One call as the hot path keeps it (``GuardPolicy`` doc)."""


class GuardPolicy(_Base):  # type: ignore[misc,valid-type]
    """The guard (module doc). ``target``, ``mode``, ``history``,
    ``on_violation`` default to the environment (``ENV``).

    The hot path keeps, per call, a small tuple of what only the call can
    read: the op code, the key and chunk objects, the ``ref_cnt`` values
    before and after, the request id and the positions its context gives
    (the caller may change those later), copies of the key lists. The
    text of the records is made from those tuples in batches
    (``_encode``), every ``_BUFFER`` calls, by the call that fills the
    buffer: the key ids, the chunk identities against what was inserted,
    the positions already written, the idle order for rotation headers are
    the encoder's state, moved in call order, so that the bytes are those
    that the call-by-call encoding of earlier versions wrote. In ``check``
    mode every call is encoded and judged at once (online).
    """

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
        self._insert = p.insert
        self._remove = p.remove
        self._touch = p.touch
        self._evict = p.evict
        self._clear = getattr(p, "clear", None)
        self._mark_e = getattr(p, "mark_evictable", None) or _nothing
        self._mark_ne = getattr(p, "mark_non_evictable", None) or _nothing
        self._insert_ctx = _takes(p.insert, 3)
        self._touch_ctx = _takes(p.touch, 2)
        hooks = {name: getattr(p, name) for name in (
            "on_store_miss", "on_request_access", "on_request_finished") if _own(p, name)}
        self._store_miss = hooks.get("on_store_miss")
        self._access = hooks.get("on_request_access")
        self._finish = hooks.get("on_request_finished")
        """The policy's own hooks (None: vLLM's base class's, done by the
        guard as the base class does, its calls recorded)."""
        # -- the hot path's state
        self._live: dict[Any, Any] = {}
        """Present keys -> the chunk inserted: a ``mark_*`` reads its
        ``ref_cnt`` during the call."""
        self._pending: list[Item] = []
        """Calls not encoded yet (``Item``)."""
        self._markers = 0
        """Items of ``_pending`` that are not calls."""
        self._plain: type | None = None
        """The last context class whose position reads are plain (the
        guard reads their dict: ``_plain_position_reads``)."""
        self.generation = 0
        self._thread = threading.get_ident()
        self._threads: dict[int, int] = {self._thread: 0}
        self._lock = threading.Lock()
        self._online = self.mode == "check"
        self._limit = 1 if self._online else _BUFFER
        """Pending calls that trigger an encoding (1: check mode's online judge)."""
        # -- the encoder's state (moved in call order, by ``_encode``)
        self._ids = TextIds()
        """Key -> its id, as text."""
        self._requests = TextIds()
        """Request ids by ``req_id``, for the whole history (a request that
        runs across a reset keeps its number, as the model keeps its
        positions)."""
        self._held: dict[Any, _Held] = {}
        """Present keys: the chunk the guard saw inserted, the text a get
        that returns it begins with, the key's id and the chunk's id."""
        self._idle: dict[Any, None] = {}
        """Idle keys in the seed LRU's order (for a segment header's state)."""
        self._pinned: set[Any] = set()
        self._positions: dict[str, dict[str, int]] = {}
        """Per request, the key positions already written (``POSITIONS``)."""
        self._generation = "0"
        self._written_generation = 0
        self._written_thread = 0
        """The thread number of the last call encoded (a header's ``thread``)."""
        self._out: list[str] = []
        """Record texts not yet written: the buffer the writer gets every
        ``_BUFFER`` records (``_write``)."""
        self._out_markers = 0
        self._thread_at = -1
        """Where in ``_out`` a thread marker was just put (the positions
        markers of its call go before it, as they were read first)."""
        self._calls = 0
        self._flushed = 0
        self._broken = False
        self.violations: list[Violation] = []
        self.judge = CoreJudge(cache_capacity, ordered=True, sink=self._violation)
        """Judges every call online in check mode (each record as it is
        read back from its text: the judge sees what the history holds);
        idle in record mode (its work would double the guard's cost: the
        guard's own few maps give the headers' state)."""
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
        ids, idle, pinned = self._ids, self._idle, self._pinned
        for key, (_, _, k, cid) in self._held.items():
            flat += (int(k), int(cid), 0 if key in idle else (1 if key in pinned else -1))
        return fmt.header(
            capacity=self.cache_capacity, target=self.target_name, api="R9",
            mode=self.mode, segment=segment, first_call=self._calls,
            generation=self._written_generation,
            state={"keys": flat, "idle": [int(ids[key]) for key in idle]},
            thread=self._written_thread,
        )

    def _write_header_now(self) -> None:
        self.writer.write("")

    def _put(self, item: Item) -> None:
        """Keep one call (the hot path's end, spelled out inline in the
        commonest calls)."""
        if _get_ident() != self._thread:
            self._switch()
        pending = self._pending
        pending.append(item)
        if len(pending) >= self._limit:
            self._drain()

    def _switch(self) -> None:
        t = self._thread = _get_ident()
        number = self._threads.get(t)
        name = None
        if number is None:
            number = self._threads[t] = len(self._threads)
            name = threading.current_thread().name
        self._pending.append((fmt.THREAD, number, name))
        self._markers += 1

    def _drain(self) -> None:
        """Encode the pending calls; in check mode judge them."""
        with self._lock:
            items = self._pending
            if not items:
                return
            self._pending = []
            self._markers = 0
            if not self._online:
                self._encode(items)
                return
            before = self._out
            start = len(before)
            self._encode(items)
            texts = before[start:] if self._out is before else before[start:] + self._out
            try:
                for text in texts:
                    self.judge.feed_one(_read(text, 0)[0])
            except GuardViolation:
                raise
            except Exception:  # the judge's own failure must not fail the caller
                log.exception("policyspec.guard: the online judge failed at call %d; "
                              "judging stops, recording goes on", self.judge.call)
                self._online = False
                self._limit = _BUFFER

    def flush(self) -> None:
        """Encode and write the pending calls (a segment that fills up
        rotates here, its successor's header made from the encoder's
        maps)."""
        self._drain()
        with self._lock:
            self._write()

    def _write(self) -> None:
        """Hand the encoded records to the writer; forget old ids past
        ``_FORGET_AT``."""
        out = self._out
        self._out = []
        self._thread_at = -1
        if not out:
            return
        self._flushed += len(out)
        self._calls += len(out) - self._out_markers
        self._out_markers = 0
        if not self._broken:
            try:
                self.writer.write("\n".join(out) + "\n")
            except (OSError, ValueError) as exc:  # a full disk must not fail the caller
                self._broken = True
                log.error("policyspec.guard: cannot write %s (%s); recording stops, the "
                          "policy runs on", self.path, exc)
        if len(self._ids) > _FORGET_AT:
            self._out.append(f"[{fmt.FORGET},{self._ids.forget(self._held)}]")
            self._out_markers += 1
        if len(self._requests) > _FORGET_AT:  # the oldest requests are long finished
            self._requests.oldest(_FORGET_AT // 2)

    @property
    def calls(self) -> int:
        """Policy calls so far (records that are not markers)."""
        return (self._calls + len(self._out) - self._out_markers + len(self._pending)
                - self._markers)

    @property
    def recorded(self) -> int:
        """Records encoded so far (calls and markers; the positions markers
        of calls still pending are not counted yet)."""
        return self._flushed + len(self._out) + len(self._pending)

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

    # -- encoding (in call order; the encoder's state) ----------------------------

    def _encode(self, items: list[Item]) -> None:
        """Turn pending calls into record texts (spec/history.md), writing
        every ``_BUFFER`` records as the call-by-call encoding did (the
        same segment boundaries). The commonest calls inline."""
        out = self._out
        add = out.append
        ids = self._ids
        held = self._held
        held_get = held.get
        idle = self._idle
        pinned = self._pinned
        requests = self._requests
        key_id = ids.__getitem__
        positions_get = self._positions.get
        gen = self._generation
        limit = _BUFFER
        for item in items:
            op = item[0]
            if op == 0:  # get
                if len(item) == 2:
                    add(f"[0,{ids[item[1]]}]")
                else:
                    key, chunk = item[1], item[2]
                    h = held_get(key, _NOT_HELD)
                    add(h[1] + CLOSED[item[3]] if h[0] is chunk else self._stray(
                        key, chunk, item[3]))
            elif op == 6:  # mark_evictable
                key = item[1]
                found = held_get(key)
                if found is None:
                    add(f"[6,{ids[key]}]")
                else:
                    idle[key] = None  # an idle key keeps its place (the caller breaks C3)
                    pinned.discard(key)
                    ref = item[2]
                    add(f"[6,{found[2]},{CLOSED[ref if ref is not _MISSING else _ref(found)]}")
            elif op == 7:  # mark_non_evictable
                key = item[1]
                found = held_get(key)
                if found is None:
                    add(f"[7,{ids[key]}]")
                else:
                    if idle.pop(key, 0) is None:
                        pinned.add(key)
                    ref = item[2]
                    add(f"[7,{found[2]},{CLOSED[ref if ref is not _MISSING else _ref(found)]}")
            elif op == 1:  # insert
                key, chunk, c, ref, after, req, position = item[1:]
                k = ids[key]
                r = "-1" if req is None else requests[req]
                if position is not None:
                    known = positions_get(r)
                    if known is None or k not in known:
                        self._place_one(r, k, position, out)
                cid = NUMBERS[c] if c.__class__ is int else NUMBERS[_chunk_id(chunk)]
                held[key] = (chunk, f"[0,{k},{cid},", k, cid)
                if ref == 0:
                    idle[key] = None
                record = f"[1,{k},{cid},{_number(ref)},{r},{gen}"
                add(f"{record},{_number(after)}]" if after != ref else record + "]")
            elif op == 9 or op == 8:  # on_request_access, on_store_miss
                req, keys, where = item[1:]
                r = "-1" if req is None else requests[req]
                named = list(map(key_id, keys))
                if where is not None:
                    known = positions_get(r)
                    if known is None or not known.keys() >= set(named):
                        self._place(r, keys, where, out)
                add(f"[{op},{r},{gen},[{','.join(named)}]]")
            elif op == fmt.THREAD:
                number, name = item[1], item[2]
                add(f"[{fmt.THREAD},{number}]" if name is None else
                    f"[{fmt.THREAD},{number},{_string(name)}]")
                self._out_markers += 1
                self._thread_at = len(out)
                self._written_thread = number
                continue
            elif op == _DONE:
                self._positions.pop(self._requests[item[1]] if item[1] is not None else "-1",
                                    None)
                continue
            else:
                self._other(item, out)
                gen = self._generation
            if len(out) >= limit:
                self._write()
                out = self._out
                add = out.append

    def _other(self, item: Item, out: list[str]) -> None:
        """The encoding of the rarer calls (``_encode`` has the others)."""
        op = item[0]
        if op == fmt.EVICT:
            out.append(self._evict_text(item))
        elif op == fmt.FINISH:
            out.append(self._call_text(item, out))
            if item[6]:
                self._positions.pop(self._requests[item[1]] if item[1] is not None else "-1",
                                    None)
        elif op == fmt.REMOVE:
            key = item[1]
            out.append(f"[2,{self._ids[key]}]")
            if self._held.pop(key, None) is not None:
                self._idle.pop(key, None)
                self._pinned.discard(key)
        elif op == fmt.TOUCH:
            out.append(self._call_text(item, out))
            idle = self._idle
            if idle:
                for key in reversed(item[1]):
                    if key in idle:
                        del idle[key]
                        idle[key] = None
        elif op == fmt.CLEAR:
            for table in (self._held, self._idle, self._pinned, self._positions):
                table.clear()
            self._written_generation += 1
            self._generation = str(self._written_generation)
            out.append(f"[{fmt.CLEAR}]")
        elif op == fmt.RAISED:
            out.append(f"[{fmt.RAISED},{_string(item[1])},{self._call_text(item[2], out)}]")
        else:  # pragma: no cover (the hot path makes no other item)
            raise AssertionError(f"policyspec.guard: no encoding for item {op}")

    def _call_text(self, item: Item, out: list[str]) -> str:
        """The record of a call without its result (the whole record of a
        call that returns nothing), positions markers put before it."""
        op = item[0]
        text = self._ids.__getitem__
        if op == fmt.GET or op == fmt.REMOVE or op == fmt.MARK_EVICTABLE or (
                op == fmt.MARK_NON_EVICTABLE):
            return f"[{op},{text(item[1])}]"
        if op == fmt.INSERT:
            return self._insert_call(item, out)[2] + "]"
        if op == fmt.TOUCH:
            return f"[3,[{','.join(map(text, item[1]))}]]"
        if op == fmt.EVICT:
            return self._evict_call(item) + "]"
        if op == fmt.CLEAR:
            return f"[{fmt.CLEAR}]"
        r = self._request_text(item[1])
        if op == fmt.FINISH:
            groups = ",".join(["[" + ",".join(self._place(r, group, where, out)) + "]"
                               for group, where in zip(item[2], item[3], strict=True)])
            return (f"[{fmt.FINISH},{r},{self._generation},[{groups}],"
                    f"[{','.join(map(text, item[4]))}],[{','.join(map(text, item[5]))}]]")
        ids = self._place(r, item[2], item[3], out)
        return f"[{op},{r},{self._generation},[{','.join(ids)}]]"

    def _request_text(self, name: Any) -> str:
        return "-1" if name is None else self._requests[name]

    def _marker(self, out: list[str], text: str) -> None:
        """Put a positions marker before the call being encoded (and before
        the thread marker that goes with that call)."""
        if self._thread_at == len(out):
            out.insert(len(out) - 1, text)
            self._thread_at += 1
        else:
            out.append(text)
        self._out_markers += 1

    def _insert_call(self, item: Item, out: list[str]) -> tuple[str, str, str]:
        """An insert's key id, chunk id and record text without its end."""
        _, key, chunk, c, ref, _, req, position = item
        k = self._ids[key]
        r = self._request_text(req)
        if position is not None:
            known = self._positions.get(r)
            if known is None or k not in known:
                self._place_one(r, k, position, out)
        cid = NUMBERS[c] if c.__class__ is int else NUMBERS[_chunk_id(chunk)]
        return k, cid, f"[1,{k},{cid},{_number(ref)},{r},{self._generation}"

    def _place_one(self, r: str, k: str, position: Any, out: list[str]) -> None:
        """Write the position of key ``k`` in request ``r`` (not written yet)."""
        known = self._positions.get(r)
        if known is None:
            known = self._positions[r] = {}
        known[k] = position
        self._marker(out, f"[{fmt.POSITIONS},{r},[{k},{_number(position)}]]")

    def _place(self, r: str, keys: Sequence[Any], where: Sequence[Any] | None,
               out: list[str]) -> list[str]:
        """The ids of ``keys``, after writing the positions the scheduler
        gave them in request ``r`` (``where``, read during the call) that
        the history does not hold yet (a ``POSITIONS`` marker)."""
        found = list(map(self._ids.__getitem__, keys))
        if where is None:
            return found
        known = self._positions.get(r)
        if known is None:
            known = self._positions[r] = {}
        distinct = set(found)
        if known.keys().isdisjoint(distinct):  # the common cases, at C speed: all new,
            if None not in where and len(distinct) == len(found):
                try:
                    texts = list(map(NUMBERS.__getitem__, where))
                except TypeError:
                    pass  # a position that is no number: the loop below
                else:
                    known.update(zip(found, where, strict=True))
                    pairs = itertools.chain.from_iterable(zip(found, texts, strict=True))
                    self._marker(out, f"[{fmt.POSITIONS},{r},[{','.join(pairs)}]]")
                    return found
        elif known.keys() >= distinct:
            return found  # or all placed already
        new: list[str] = []
        for k, position in zip(found, where, strict=True):
            if position is not None and k not in known:  # placed once per request
                known[k] = position
                try:
                    new += (k, NUMBERS[position])
                except TypeError:
                    new += (k, repr(position))
        if new:
            self._marker(out, f"[{fmt.POSITIONS},{r},[{','.join(new)}]]")
        return found

    def _stray(self, key: Any, chunk: Any, ref: Any) -> str:
        """The record of a get that returned an object the guard did not
        see inserted under ``key``: a copy (``NOT_SAME``), or something
        else (its own id, ``NO_REF`` without a ``ref_cnt``)."""
        cid = NOT_SAME if key in self._held else _chunk_id(chunk)
        return f"[0,{self._ids[key]},{cid},{_number(ref)}]"

    def _evict_call(self, item: Item) -> str:
        return f"[4,{_number(item[1])},[{','.join(map(self._ids.__getitem__, item[2]))}]"

    def _evict_text(self, item: Item) -> str:
        call = self._evict_call(item)
        result = item[3]
        if result is None:
            return call + "]"
        if result.__class__ is str:
            return f"{call},{_string(result)}]"
        victims, whole = result
        ids = self._ids
        flat: list[str] = []
        held, idle, pinned = self._held, self._idle, self._pinned
        try:
            for key, chunk, ref in victims:
                k = ids[key]
                h = held.get(key, _NOT_HELD)
                if ref is _MISSING:
                    raise AttributeError("ref_cnt")
                flat += (k, h[3] if h[0] is chunk else (
                    _chunk_text(chunk) if h is _NOT_HELD else str(NOT_SAME)), NUMBERS[ref])
                if h is not _NOT_HELD:
                    del held[key]
                    idle.pop(key, None)
                    pinned.discard(key)
            if not whole:
                raise TypeError("not (key, chunk) pairs")
        except (TypeError, ValueError, AttributeError):
            what = f"a {item[4]} whose items are not (key, chunk) pairs"
            return f"{call},{_string(what)}]"
        return f"{call},[{','.join(flat)}]]"

    # -- reading the caller's objects during the call ------------------------------

    def _where(self, ctx: Any) -> Callable[[Any], Any] | None:
        """How to read the positions of ``ctx``'s keys (None: it has none)."""
        cls = ctx.__class__
        if cls is not self._plain:
            read = getattr(cls, "get_offload_key_position", None)
            if read is None or read not in _plain_position_reads() or not isinstance(
                    getattr(ctx, "_offload_key_positions", None), dict):
                found: Callable[[Any], Any] | None = getattr(
                    ctx, "get_offload_key_position", None)
                return found
            self._plain = cls
        plain: Callable[[Any], Any] = ctx._offload_key_positions.get
        return plain

    def _positions_of(self, ctx: Any, keys: Sequence[Any]) -> tuple[Any, ...] | None:
        """The positions ``ctx`` gives ``keys`` now (None: it gives none)."""
        cls = ctx.__class__
        if cls is self._plain:
            return tuple(map(ctx._offload_key_positions.get, keys))
        where = self._where(ctx)
        return None if where is None else tuple(map(where, keys))

    def _raised(self, exc: BaseException, item: Item) -> None:
        self._put((fmt.RAISED, type(exc).__name__, item))

    # -- the policy calls --------------------------------------------------------

    def get(self, key: Any) -> Any:
        # The hottest call (about half of the manager's): _put inlined.
        try:
            chunk: Any = self._get(key)
        except BaseException as exc:
            self._raised(exc, (0, key))
            raise
        if _get_ident() != self._thread:
            self._switch()
        pending = self._pending
        if chunk is None:
            pending.append((0, key))
        else:
            try:
                pending.append((0, key, chunk, chunk.ref_cnt))
            except AttributeError:
                pending.append((0, key, chunk, NO_REF))
        if len(pending) >= self._limit:
            self._drain()
        return chunk

    def insert(self, key: Any, chunk: Any, req_context: Any = None) -> None:
        ref = chunk.ref_cnt
        c = getattr(chunk, "chunk_id", None)
        if req_context is None:
            req = position = None
        else:
            req = getattr(req_context, "req_id", None)
            cls = req_context.__class__
            if cls is self._plain:
                position = req_context._offload_key_positions.get(key)
            else:
                where = self._where(req_context)
                position = None if where is None else where(key)
        try:
            if self._insert_ctx:
                self._insert(key, chunk, req_context)
            else:
                self._insert(key, chunk)
        except BaseException as exc:
            self._raised(exc, (1, key, chunk, c, ref, ref, req, position))
            raise
        self._live[key] = chunk
        if _get_ident() != self._thread:
            self._switch()
        pending = self._pending
        pending.append((1, key, chunk, c, ref, chunk.ref_cnt, req, position))
        if len(pending) >= self._limit:
            self._drain()

    def remove(self, key: Any) -> None:
        try:
            self._remove(key)
        except BaseException as exc:
            self._raised(exc, (2, key))
            raise
        self._live.pop(key, None)
        self._put((2, key))

    def touch(self, keys: Iterable[Any], req_context: Any = None) -> None:
        keys = keys if isinstance(keys, list | tuple) else list(keys)
        item = (3, keys if keys.__class__ is tuple else tuple(keys))  # as passed
        try:
            if self._touch_ctx:
                self._touch(keys, req_context)
            else:
                self._touch(keys)
        except BaseException as exc:
            self._raised(exc, item)
            raise
        self._put(item)

    def evict(self, n: int, protected: Any) -> Any:
        shut = tuple(protected)
        try:
            result = self._evict(n, protected)
        except BaseException as exc:
            self._raised(exc, (4, n, shut))
            raise
        if result is None:
            self._put((4, n, shut, None))
        elif result.__class__ is list or result.__class__ is tuple:
            victims: list[tuple[Any, Any, Any]] = []
            whole = True
            live = self._live
            try:
                for pair in result:
                    key, chunk = pair
                    ref = getattr(chunk, "ref_cnt", _MISSING)
                    victims.append((key, chunk, ref))
                    if ref is _MISSING:
                        break  # the encoding stops at it
                    live.pop(key, None)
            except (TypeError, ValueError):
                whole = False
            self._put((4, n, shut, (victims, whole), type(result).__name__))
        else:
            self._put((4, n, shut, f"a {type(result).__name__}"))
        return result

    def clear(self) -> None:
        try:
            if self._clear is not None:
                self._clear()
        except BaseException as exc:
            self._raised(exc, (fmt.CLEAR,))
            raise
        self._live.clear()
        self.generation += 1
        self._put((fmt.CLEAR,))

    def mark_evictable(self, key: Any) -> None:
        try:
            self._mark_e(key)
        except BaseException as exc:
            self._raised(exc, (6, key))
            raise
        chunk = self._live.get(key)
        if _get_ident() != self._thread:
            self._switch()
        pending = self._pending
        pending.append((6, key, _MISSING if chunk is None else chunk.ref_cnt))
        if len(pending) >= self._limit:
            self._drain()

    def mark_non_evictable(self, key: Any) -> None:
        try:
            self._mark_ne(key)
        except BaseException as exc:
            self._raised(exc, (7, key))
            raise
        chunk = self._live.get(key)
        if _get_ident() != self._thread:
            self._switch()
        pending = self._pending
        pending.append((7, key, _MISSING if chunk is None else chunk.ref_cnt))
        if len(pending) >= self._limit:
            self._drain()

    # -- the request hooks (vLLM 0.33) -------------------------------------------

    def on_store_miss(self, keys: Iterable[Any], req_context: Any) -> None:
        keys = keys if isinstance(keys, list | tuple) else list(keys)
        seen = keys if keys.__class__ is tuple else tuple(keys)
        item = (fmt.STORE_MISS, getattr(req_context, "req_id", None), seen,
                self._positions_of(req_context, seen))
        own = self._store_miss
        try:
            if own is not None:
                own(keys, req_context)
        except BaseException as exc:
            self._raised(exc, item)
            raise
        self._put(item)
        if own is None:
            self.touch(keys, req_context)

    def on_request_access(self, keys: Iterable[Any], req_context: Any) -> None:
        keys = keys if isinstance(keys, list | tuple) else list(keys)
        seen = keys if keys.__class__ is tuple else tuple(keys)
        item = (fmt.ACCESS, getattr(req_context, "req_id", None), seen,
                self._positions_of(req_context, seen))
        own = self._access
        try:
            if own is not None:
                own(keys, req_context)
        except BaseException as exc:
            self._raised(exc, item)
            raise
        self._put(item)

    def on_request_finished(self, key_groups: Sequence[Sequence[Any]],
                            insertion_only_keys: Any, reused_keys: Any,
                            req_context: Any) -> None:
        req = getattr(req_context, "req_id", None)
        groups = tuple([g if g.__class__ is tuple else tuple(g) for g in key_groups])
        where = tuple([self._positions_of(req_context, g) for g in groups])
        own = self._finish
        item = (fmt.FINISH, req, groups, where, tuple(insertion_only_keys), tuple(reused_keys),
                own is not None)
        try:
            if own is not None:
                own(key_groups, insertion_only_keys, reused_keys, req_context)
        except BaseException as exc:
            self._raised(exc, item)
            raise
        self._put(item)
        if own is None:
            for group in key_groups:
                self.touch(group, req_context)
            self._pending.append((_DONE, req))
            self._markers += 1


def _ref(held: _Held) -> Any:
    """The ``ref_cnt`` of a ``mark_*`` whose call did not find the key held
    (which the encoder holds: a key whose eviction record it could not
    read), read now."""
    return getattr(held[0], "ref_cnt", NO_REF)


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
