"""``policyspec.guard``: a ``CachePolicy`` vLLM loads by module path that wraps
the policy one wants to run, records every call (spec/history.md) and, in
``check`` mode, judges core's cheap MUSTs online (spec/production.md). It is
configured by environment variables because vLLM builds a policy with
``cache_capacity`` alone. It never changes what the wrapped policy returns
or raises, and makes no call of its own, which could move the policy's
state.
"""

from __future__ import annotations

import atexit
import functools
import importlib
import importlib.util
import inspect
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
from policyspec.history.judge import in_place_exact
from policyspec.history.judge_process import JudgeProcess, reported_online
from policyspec.history.texts import CLOSED, NUMBERS, TextIds
from policyspec.history.writer import DEFAULT_KEEP, DEFAULT_MAX_BYTES, SegmentWriter
from policyspec.vllm.standins.gaps import raise_if_gap

__all__ = ["ENV", "GuardPolicy", "GuardViolation", "load_target"]

def _base() -> type:
    """vLLM's ``CachePolicy`` when vLLM is installed (its manager asserts
    ``issubclass(cls, CachePolicy)``), else the stand-in of it."""
    try:
        module = importlib.import_module("vllm.v1.kv_offload.cpu.policies.base")
    except ImportError:
        from policyspec.vllm.standins.policies import CachePolicy

        return CachePolicy
    found: type = module.CachePolicy
    return found


_Base = _base()

log = logging.getLogger("policyspec.guard")

ENV = {
    "target": "POLICYSPEC_GUARD_TARGET",
    "mode": "POLICYSPEC_GUARD_MODE",
    "judge": "POLICYSPEC_GUARD_JUDGE",
    "history": "POLICYSPEC_GUARD_HISTORY",
    "on_violation": "POLICYSPEC_GUARD_ON_VIOLATION",
    "max_bytes": "POLICYSPEC_GUARD_MAX_BYTES",
    "segments": "POLICYSPEC_GUARD_SEGMENTS",
    "api": "POLICYSPEC_GUARD_API",
}
"""The environment variables the guard reads (spec/production.md)."""

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


def _installed_revision() -> str | None:
    """The revision of the installed vLLM release, or None."""
    from policyspec.releases import installed_release

    installed = installed_release()
    release = installed[1] if installed is not None else None
    return release.revision if release is not None else None


def _untouched() -> set[str]:
    """The revisions of the releases whose base class has no ``touch``."""
    from policyspec.releases import RELEASES

    return {r.revision for r in RELEASES if not r.manager_touches}


UNDRIVEN = {
    "R6": "evict(n, protected, req_context, num_blocks_in_cache) and sessions",
    "R6-draft": "evict(n, protected, req_id, start_pos) and sessions",
    "R7b": "evict(n, protected, deprioritized)",
}
"""Revisions whose calls the guard cannot make as vLLM's manager does (it
calls ``evict(n, protected)``), each with what they need instead."""


def _revision(cls: type, api: str | None) -> str:
    """The API revision ``cls`` runs as under the vLLM that loads the guard,
    chosen as ``policyspec check`` chooses (``choose_revision``: the forced
    one, else the detected one; for a class that fits two, the installed
    vLLM's, else the newest). ValueError for a revision the guard cannot
    drive: recording calls it cannot make would blame the policy."""
    from policyspec.adapters.revisions import choose_revision, detect
    from policyspec.protocols import API_NAMES

    if api is not None and api not in API_NAMES:
        raise ValueError(f"policyspec.guard: unknown API revision {api!r}; known: "
                         f"{', '.join(API_NAMES)}")
    chosen, _ = choose_revision(detect(cls), api)
    if chosen in UNDRIVEN:
        raise ValueError(
            f"policyspec.guard: {cls.__name__} is an API revision {chosen} policy "
            f"({UNDRIVEN[chosen]}); the guard calls a policy as vLLM's manager does, "
            "evict(n, protected), and cannot drive it: check it with `policyspec check`")
    return chosen


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


def _unrecorded(own: Callable[..., Any] | None) -> Callable[[Any, Any], None]:
    """A guard's observation hook: the policy's own ``own``, or nothing."""

    def hook(keys: Any, req_context: Any) -> None:
        if own is not None:
            own(keys, req_context)

    return hook


def _own(policy: object, name: str) -> bool:
    """Whether the policy's class defines hook ``name`` itself (not vLLM's
    base class, nor a stand-in of it)."""
    for klass in type(policy).__mro__:
        if name in klass.__dict__:
            if getattr(klass.__dict__[name], "_policyspec_default", False):
                return False  # it inherits the base class's default (standins.intree)
            home = klass.__module__
            return not (klass.__name__ == "CachePolicy" and (
                home.startswith("vllm.") or home.startswith("policyspec.vllm.standins")))
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
    from policyspec.vllm.standins.keys import ReqContext

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


class GuardPolicy(_Base):  # type: ignore[misc,valid-type]
    """The guard (spec/production.md). ``target``, ``mode``, ``history``,
    ``on_violation`` default to the environment (``ENV``).

    Every call becomes the text of its record at once (spec/history.md),
    made of cached pieces (``history.texts``): key ids are kept as text,
    the present keys' chunk ids too, so that a ``get`` costs three lookups
    and one string. What the caller may change after the call (the key
    lists, ``ref_cnt``) is read during it. The buffer of texts is joined
    and written every ``_BUFFER`` records.
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
        api: str | None = None,
        judge: str | None = None,
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
        self.judging = judge or env(ENV["judge"], "inline")
        """Where check mode judges: ``inline`` or ``process``."""
        if self.judging not in ("inline", "process"):
            raise ValueError("policyspec.guard: judge must be inline or process, not "
                             f"{self.judging!r}")
        if self.judging == "process" and (self.mode, self.on_violation) != ("check", "log"):
            raise ValueError("policyspec.guard: the judge process judges check mode and logs "
                             f"what it finds; mode is {self.mode}, on_violation "
                             f"{self.on_violation} (raise needs the inline judge)")
        path = str(history or env(ENV["history"], "policyspec-history.jsonl"))
        self.path = Path(path.replace("{pid}", str(os.getpid())))
        self.api = _revision(cls, api or env(ENV["api"]))
        self.policy = cls(cache_capacity=cache_capacity)
        """The API revision the wrapped policy runs as: the one asked for, or
        the detected one (for a policy that fits R9 and R10, the installed
        vLLM's, else the newest)."""
        p = self.policy
        self._get = p.get
        self._insert = p.insert
        self._remove = p.remove
        self._touch = getattr(p, "touch", None)
        self._evict = p.evict
        self._clear = getattr(p, "clear", None)
        self._mark_e = getattr(p, "mark_evictable", None) or _nothing
        self._mark_ne = getattr(p, "mark_non_evictable", None) or _nothing
        self._insert_ctx = _takes(p.insert, 3)
        self._touch_ctx = self._touch is not None and _takes(self._touch, 2)
        self._default_touches = self._touch is not None and not _untouched() & {
            self.api, _installed_revision()}
        """Whether a hook the policy lacks touches: the default of its
        revision's base class, and of the installed vLLM's (0.34's and every
        release's without touch touch nothing)."""
        hooks = {name: getattr(p, name) for name in (
            "on_store_miss", "on_request_access", "on_request_finished") if _own(p, name)}
        self._store_miss = hooks.get("on_store_miss")
        self._access = hooks.get("on_request_access")
        self._finish = hooks.get("on_request_finished")
        """The policy's own hooks (None: vLLM's base class's, done by the
        guard as the base class does, its calls recorded)."""
        from policyspec.protocols import observation_hooks

        # A later release's observation hooks: handed to the policy (its own,
        # else the base class's default, nothing) but not recorded, as the
        # history format has no record for them yet (spec/drift.md).
        for name in observation_hooks(self.api):
            setattr(self, name, _unrecorded(getattr(p, name) if _own(p, name) else None))
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
        self._plain: type | None = None
        """The last context class whose position reads are plain (the
        guard reads their dict: ``_plain_position_reads``)."""
        self._calls = 0
        self._markers = 0
        self.generation = 0
        self._generation = "0"
        self.violations: list[Violation] = []
        self._buffer: list[str] = []
        self._flushed = 0
        self._broken = False
        self._thread = threading.get_ident()
        self._threads: dict[int, int] = {self._thread: 0}
        self._lock = threading.Lock()
        self._online = self.mode == "check" and self.judging == "inline"
        self.judge = CoreJudge(cache_capacity, ordered=in_place_exact(), sink=self._violation)
        """Judges every call online in check mode (each record as it is
        read back from its text: the judge sees what the history holds);
        idle in record mode (its work would double the guard's cost: the
        guard's own few maps give the headers' state) and with the judge
        process."""
        self._judge_process = JudgeProcess(cache_capacity, self._report) if (
            self.judging == "process") else None
        """The same judge in a child process, fed at each flush (its
        ``judged``: the calls it judged, once closed)."""
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
            capacity=self.cache_capacity, target=self.target_name, api=self.api,
            mode=self.mode, segment=segment, first_call=self._calls,
            generation=self.generation,
            state={"keys": flat, "idle": [int(ids[key]) for key in idle]},
            thread=self._threads.get(self._thread, 0),
        )

    def _write_header_now(self) -> None:
        self.writer.write("")

    def _put(self, text: str) -> None:
        """Buffer one record's text and, in check mode, judge it at once."""
        if _get_ident() != self._thread:
            self._switch(_get_ident())
        buffer = self._buffer
        buffer.append(text)
        if self._online:
            try:
                self.judge.feed_one(_read(text, 0)[0])
            except GuardViolation:
                raise
            except Exception:  # the judge's own failure must not fail the caller
                log.exception("policyspec.guard: the online judge failed at call %d; "
                              "judging stops, recording goes on", self.judge.call)
                self._online = False
        if len(buffer) >= _BUFFER:
            self.flush()

    def _switch(self, t: int) -> None:
        self._thread = t
        number = self._threads.get(t)
        if number is None:
            number = self._threads[t] = len(self._threads)
            name = threading.current_thread().name
            self._buffer.append(f"[{fmt.THREAD},{number},{_string(name)}]")
        else:
            self._buffer.append(f"[{fmt.THREAD},{number}]")
        self._markers += 1

    def flush(self) -> None:
        """Write the buffered records (a segment that fills up rotates
        here, its successor's header made from the guard's maps); forget
        old ids past ``_FORGET_AT``."""
        with self._lock:
            buffer, self._buffer = self._buffer, []
            if not buffer:
                return
            self._flushed += len(buffer)
            self._calls += len(buffer) - self._markers
            self._markers = 0
            text = "\n".join(buffer) + "\n"
            if not self._broken:
                try:
                    self.writer.write(text)
                except (OSError, ValueError) as exc:  # a full disk must not fail the caller
                    self._broken = True
                    log.error("policyspec.guard: cannot write %s (%s); recording stops, the "
                              "policy runs on", self.path, exc)
            if self._judge_process is not None:
                self._judge_process.send(text)
            if len(self._ids) > _FORGET_AT:
                self._buffer.append(f"[{fmt.FORGET},{self._ids.forget(self._held)}]")
                self._markers += 1
            if len(self._requests) > _FORGET_AT:  # the oldest requests are long finished
                self._requests.oldest(_FORGET_AT // 2)

    @property
    def calls(self) -> int:
        """Policy calls so far (records that are not markers)."""
        return self._calls + len(self._buffer) - self._markers

    @property
    def recorded(self) -> int:
        """Records so far (calls and markers)."""
        return self._flushed + len(self._buffer)

    def close(self) -> None:
        """Flush and close the history (also run at interpreter exit); with
        the judge process, wait for its last answers."""
        self.flush()
        if self._judge_process is not None:
            self._judge_process.close()
            judged = self._judge_process.judged
            if judged is not None and judged != self.calls:
                log.error("policyspec.guard: the judge process judged %d of %d calls",
                          judged, self.calls)
        try:
            self.writer.close()
        except OSError as exc:
            log.error("policyspec.guard: cannot close %s (%s)", self.path, exc)
        _open_guards.discard(self)

    def _violation(self, violation: Violation) -> None:
        if self._online:
            self._report(violation)

    def _report(self, violation: Violation) -> None:
        if not reported_online(violation):
            return
        self.violations.append(violation)
        log.error("policyspec.guard: %s", _text(violation))
        if self.on_violation == "raise":
            raise GuardViolation(violation)

    # -- ids -------------------------------------------------------------------

    def _request(self, ctx: Any) -> str:
        try:
            name = ctx.req_id
        except AttributeError:
            return "-1"
        return "-1" if name is None else self._requests[name]

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

    def _place(self, r: str, keys: Sequence[Any], ctx: Any) -> list[str]:
        """The ids of ``keys``, after writing the positions the scheduler
        gave them in request ``r`` that the history does not hold yet (a
        ``POSITIONS`` marker)."""
        ids = self._ids
        where = self._where(ctx)
        if where is None:
            return [ids[key] for key in keys]
        known = self._positions.get(r)
        if known is None:
            known = self._positions[r] = {}
        found: list[str] = []
        new: list[str] = []
        for key in keys:
            k = ids[key]
            found.append(k)
            if k not in known:  # the scheduler places a key once per request
                position = where(key)
                if position is not None:
                    known[k] = position
                    try:
                        new += (k, NUMBERS[position])
                    except TypeError:
                        new += (k, repr(position))
        if new:
            self._buffer.append(f"[{fmt.POSITIONS},{r},[{','.join(new)}]]")
            self._markers += 1
        return found

    def _place_one(self, r: str, key: Any, k: str, ctx: Any) -> None:
        """``_place`` of one key whose id is ``k`` (an insert's)."""
        known = self._positions.get(r)
        if known is not None and k in known:
            return
        where = self._where(ctx)
        if where is None:
            return
        position = where(key)
        if position is not None:
            if known is None:
                known = self._positions[r] = {}
            known[k] = position
            self._buffer.append(f"[{fmt.POSITIONS},{r},[{k},{_number(position)}]]")
            self._markers += 1

    def _raised(self, exc: BaseException, record: str) -> None:
        """Record that the call raised; for policyspec's own gap (the
        stand-ins lack what the policy reached: ``standins.gaps``) record
        nothing, which would blame the policy, and raise ``StandinGap``."""
        raise_if_gap(exc)
        self._put(f"[{fmt.RAISED},{_string(type(exc).__name__)},{record}]")

    # -- the policy calls --------------------------------------------------------

    def get(self, key: Any) -> Any:
        # The hottest call (about half of the manager's): _put inlined.
        try:
            chunk: Any = self._get(key)
        except BaseException as exc:
            self._raised(exc, f"[0,{self._ids[key]}]")
            raise
        if chunk is None:
            text = f"[0,{self._ids[key]}]"
        else:
            held = self._held.get(key, _NOT_HELD)
            text = held[1] + CLOSED[chunk.ref_cnt] if held[0] is chunk else self._stray(
                key, chunk)
        if _get_ident() != self._thread or self._online:
            self._put(text)
            return chunk
        buffer = self._buffer
        buffer.append(text)
        if len(buffer) >= _BUFFER:
            self.flush()
        return chunk

    def _stray(self, key: Any, chunk: Any) -> str:
        """The record of a get that returned an object the guard did not
        see inserted under ``key``: a copy (``NOT_SAME``), or something
        else (its own id, ``NO_REF`` without a ``ref_cnt``)."""
        cid = NOT_SAME if key in self._held else _chunk_id(chunk)
        return f"[0,{self._ids[key]},{cid},{_number(getattr(chunk, 'ref_cnt', NO_REF))}]"

    def insert(self, key: Any, chunk: Any, req_context: Any = None) -> None:
        k = self._ids[key]
        r = "-1"
        if req_context is not None:
            r = self._request(req_context)
            self._place_one(r, key, k, req_context)
        cid = _chunk_text(chunk)
        ref = chunk.ref_cnt
        try:
            record = f"[1,{k},{cid},{NUMBERS[ref]},{r},{self._generation}"
        except TypeError:
            record = f"[1,{k},{cid},{ref!r},{r},{self._generation}"
        try:
            if self._insert_ctx:
                self._insert(key, chunk, req_context)
            else:
                self._insert(key, chunk)
        except BaseException as exc:
            self._raised(exc, record + "]")
            raise
        self._held[key] = (chunk, f"[0,{k},{cid},", k, cid)
        if ref == 0:
            self._idle[key] = None
        after = chunk.ref_cnt
        if after != ref:  # the policy wrote ref_cnt
            self._put(f"{record},{_number(after)}]")
        elif self._online or _get_ident() != self._thread:
            self._put(record + "]")
        else:
            buffer = self._buffer
            buffer.append(record + "]")
            if len(buffer) >= _BUFFER:
                self.flush()

    def _gone(self, key: Any) -> None:
        if self._held.pop(key, None) is not None:
            self._idle.pop(key, None)
            self._pinned.discard(key)

    def remove(self, key: Any) -> None:
        record = f"[2,{self._ids[key]}]"
        try:
            self._remove(key)
        except BaseException as exc:
            self._raised(exc, record)
            raise
        self._gone(key)
        self._put(record)

    def touch(self, keys: Iterable[Any], req_context: Any = None) -> None:
        keys = keys if isinstance(keys, list | tuple) else list(keys)
        touched = tuple(keys)  # as passed: the policy may change a list
        record = f"[3,[{','.join(map(self._ids.__getitem__, touched))}]]"
        if self._touch is None:
            raise AttributeError(f"{type(self.policy).__name__} has no touch (vLLM 0.34, R10)")
        try:
            if self._touch_ctx:
                self._touch(keys, req_context)
            else:
                self._touch(keys)
        except BaseException as exc:
            self._raised(exc, record)
            raise
        idle = self._idle
        if idle:
            for key in reversed(touched):
                if key in idle:
                    del idle[key]
                    idle[key] = None
        self._put(record)

    def evict(self, n: int, protected: Any) -> Any:
        ids = self._ids
        call = f"[4,{_number(n)},[{','.join(map(ids.__getitem__, protected))}]"
        try:
            result = self._evict(n, protected)
        except BaseException as exc:
            self._raised(exc, call + "]")
            raise
        if result is None:
            self._put(call + "]")
            return result
        if result.__class__ is list or result.__class__ is tuple:
            flat: list[str] = []
            held, idle, pinned = self._held, self._idle, self._pinned
            try:
                for key, chunk in result:
                    k = ids[key]
                    h = held.get(key, _NOT_HELD)
                    flat += (k, h[3] if h[0] is chunk else (
                        _chunk_text(chunk) if h is _NOT_HELD else str(NOT_SAME)),
                        NUMBERS[chunk.ref_cnt])
                    if h is not _NOT_HELD:  # _gone, inline
                        del held[key]
                        idle.pop(key, None)
                        pinned.discard(key)
            except (TypeError, ValueError, AttributeError):
                what = f"a {type(result).__name__} whose items are not (key, chunk) pairs"
                self._put(f"{call},{_string(what)}]")
                return result
            self._put(f"{call},[{','.join(flat)}]]")
        else:
            self._put(f"{call},{_string(f'a {type(result).__name__}')}]")
        return result

    def clear(self) -> None:
        try:
            if self._clear is not None:
                self._clear()
        except BaseException as exc:
            self._raised(exc, f"[{fmt.CLEAR}]")
            raise
        for table in (self._held, self._idle, self._pinned, self._positions):
            table.clear()
        self.generation += 1
        self._generation = str(self.generation)
        self._put(f"[{fmt.CLEAR}]")

    def mark_evictable(self, key: Any) -> None:
        try:
            self._mark_e(key)
        except BaseException as exc:
            self._raised(exc, f"[6,{self._ids[key]}]")
            raise
        held = self._held.get(key)
        if held is None:
            self._put(f"[6,{self._ids[key]}]")
            return
        self._idle[key] = None  # an idle key keeps its place (the caller breaks C3)
        self._pinned.discard(key)
        text = f"[6,{held[2]},{CLOSED[held[0].ref_cnt]}"
        if self._online or _get_ident() != self._thread:
            self._put(text)
            return
        buffer = self._buffer
        buffer.append(text)
        if len(buffer) >= _BUFFER:
            self.flush()

    def mark_non_evictable(self, key: Any) -> None:
        try:
            self._mark_ne(key)
        except BaseException as exc:
            self._raised(exc, f"[7,{self._ids[key]}]")
            raise
        held = self._held.get(key)
        if held is None:
            self._put(f"[7,{self._ids[key]}]")
            return
        if self._idle.pop(key, 0) is None:
            self._pinned.add(key)
        text = f"[7,{held[2]},{CLOSED[held[0].ref_cnt]}"
        if self._online or _get_ident() != self._thread:
            self._put(text)
            return
        buffer = self._buffer
        buffer.append(text)
        if len(buffer) >= _BUFFER:
            self.flush()

    # -- the request hooks (vLLM 0.33) -------------------------------------------

    def on_store_miss(self, keys: Iterable[Any], req_context: Any) -> None:
        keys = keys if isinstance(keys, list | tuple) else list(keys)
        r = self._request(req_context)
        ids = self._place(r, keys, req_context)
        record = f"[{fmt.STORE_MISS},{r},{self._generation},[{','.join(ids)}]]"
        own = self._store_miss
        try:
            if own is not None:
                own(keys, req_context)
        except BaseException as exc:
            self._raised(exc, record)
            raise
        self._put(record)
        if own is None and self._default_touches:
            self.touch(keys, req_context)

    def on_request_access(self, keys: Iterable[Any], req_context: Any) -> None:
        keys = keys if isinstance(keys, list | tuple) else list(keys)
        r = self._request(req_context)
        ids = self._place(r, keys, req_context)
        record = f"[{fmt.ACCESS},{r},{self._generation},[{','.join(ids)}]]"
        own = self._access
        try:
            if own is not None:
                own(keys, req_context)
        except BaseException as exc:
            self._raised(exc, record)
            raise
        self._put(record)

    def on_request_finished(self, key_groups: Sequence[Sequence[Any]],
                            insertion_only_keys: Any, reused_keys: Any,
                            req_context: Any) -> None:
        r = self._request(req_context)
        groups = ",".join(["[" + ",".join(self._place(r, group, req_context)) + "]"
                           for group in key_groups])
        text = self._ids.__getitem__
        record = (f"[{fmt.FINISH},{r},{self._generation},[{groups}],"
                  f"[{','.join(map(text, insertion_only_keys))}],"
                  f"[{','.join(map(text, reused_keys))}]]")
        own = self._finish
        try:
            if own is not None:
                own(key_groups, insertion_only_keys, reused_keys, req_context)
        except BaseException as exc:
            self._raised(exc, record)
            raise
        self._put(record)
        if own is None and self._default_touches:
            for group in key_groups:
                self.touch(group, req_context)
        self._positions.pop(r, None)


_open_guards: weakref.WeakSet[GuardPolicy] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for guard in list(_open_guards):
        try:
            guard.close()
        except Exception:
            log.exception("policyspec.guard: could not close %s", guard.path)
