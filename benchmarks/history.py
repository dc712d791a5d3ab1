"""``python -m benchmarks.history``: how fast ``check-history`` judges a
recorded history, whether its memory stays flat as the history grows, and
what ``policyspec.guard`` costs a policy on the manager workload.

1. A history of about 1,000,000 calls is recorded (``policyspec record`` of
   the reference LRU behind the emulated 0.33 manager) and judged under core
   alone and under core and lru, the median of ``--repeats`` passes, in
   process CPU time.
2. Memory: the judge runs in a fresh child process on the 1 M history and
   on a 10 M one (ten copies of it, each after a ``clear``, generations
   renumbered), and reports each child's peak resident set.
3. Guard cost: the manager workload's policy calls and ``ref_cnt`` writes
   are captured once (the 0.33 reference LRU, vLLM's calls as the
   emulation makes them), then replayed, in alternation, against the bare
   policy, a wrapper that records nothing (``_Forward``: the floor under
   any recorder that is a Python class in front of the policy), a wrapper
   that only keeps each call's raw objects in a list (``_Keep``: the floor
   under any recorder in Python that holds a tuple per call), one that keeps
   them flat and hands them on as bytes (``_Flat``: the floor under a guard
   whose encoding runs in a second process), the guard
   in record mode and the guard in check mode (writing the history to a
   file); medians of ``--repeats`` rounds. The figure is the time of the
   replay loop, so it includes the loop's own cost in each variant alike;
   the guard's is counted whole: its buffered writes and its closing
   flush. A guard that encodes its records in batches (one call in
   ``_BUFFER`` paying for a batch) and says so by an ``encoding_seconds``
   attribute gets a second line, the part of the calls themselves (the
   total less ``encoding_seconds``) beside the batches'; only the total is
   the guard's cost.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

REFERENCE = "policyspec.reference.lru:LRUCachePolicy"
REFERENCE_033 = "policyspec.reference.lru033:LRU033CachePolicy"


def record_history(path: Path, calls: int, seed: int = 7) -> tuple[int, float]:
    """Records and seconds (wall) of a ``policyspec record`` run."""
    from policyspec.commands.record import record

    started = time.monotonic()
    guard, stopped = record(REFERENCE, str(path), calls=calls, seed=seed, capacity=64)
    if stopped is not None:
        raise RuntimeError(f"the recording stopped: {stopped!r}")
    return guard.calls, time.monotonic() - started


def judge_speed(path: Path, profiles: tuple[str, ...], repeats: int) -> tuple[int, list[float]]:
    from policyspec.history.judge import judge_paths

    rates = []
    calls = 0
    for _ in range(repeats):
        started = time.process_time()
        verdict = judge_paths([path], profiles)
        seconds = time.process_time() - started
        if not verdict.passed:
            raise RuntimeError(f"the reference's history does not conform to {profiles}")
        calls = verdict.calls
        rates.append(calls / seconds)
    return calls, rates


def repeat_history(source: Path, target: Path, copies: int) -> int:
    """``copies`` copies of a one-segment history, each after a clear, the
    generations of its records shifted to follow on; the records written."""
    from policyspec.history import format as fmt

    lines = source.read_text(encoding="ascii").splitlines()
    header, body = lines[0], [json.loads(line) for line in lines[1:]]
    clears = sum(1 for r in body if r[0] == fmt.CLEAR)
    written = 0
    with open(target, "w", encoding="ascii") as out:
        out.write(header + "\n")
        for copy in range(copies):
            shift = copy * (clears + 1)
            if copy:
                out.write("[5]\n")
                written += 1
            for r in body:
                op = r[0]
                if shift and op == fmt.INSERT and len(r) > 5:
                    r = [*r[:5], r[5] + shift, *r[6:]]
                elif shift and op in fmt.HOOK_OPS:
                    r = [r[0], r[1], r[2] + shift, *r[3:]]
                out.write(json.dumps(r, separators=(",", ":")) + "\n")
            written += len(body)
    return written


_PEAK = """
import re, sys, time
from policyspec.history.judge import judge_paths
started = time.process_time()
verdict = judge_paths([sys.argv[1]], tuple(sys.argv[2].split(",")))
seconds = time.process_time() - started
status = open("/proc/self/status").read()
peak = re.search(r"VmHWM:\\s+(\\d+) kB", status).group(1)
print(verdict.calls, verdict.passed, seconds, peak)
"""
"""VmHWM, the peak of this process's own memory: ``ru_maxrss`` would carry
the parent's peak over the exec on Linux."""


def judge_in_child(path: Path, profiles: str) -> tuple[int, bool, float, int]:
    """Calls, verdict, CPU seconds and peak RSS (KiB) of a judge run in a
    fresh process."""
    done = subprocess.run([sys.executable, "-c", _PEAK, str(path), profiles], check=True,
                          capture_output=True, text=True)
    calls, passed, seconds, peak = done.stdout.split()
    return int(calls), passed == "True", float(seconds), int(peak)


# -- the guard's cost ------------------------------------------------------------


class _Capture:
    """In front of the policy: logs each call (name, args); the manager's
    listener logs each ref_cnt write as ("", (chunk, value))."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.trace: list[tuple[str, tuple[Any, ...]]] = []

    def before_write(self, key: Any, chunk: Any, new_ref_cnt: int) -> None:
        return None

    def after_write(self, key: Any, chunk: Any, new_ref_cnt: int) -> None:
        self.trace.append(("", (chunk, new_ref_cnt)))

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self.policy, name)
        trace = self.trace

        def call(*args: Any) -> Any:
            if name == "insert":
                trace.append(("", (args[1], args[1].ref_cnt)))
            trace.append((name, args))
            return method(*args)

        return call


def _write(chunk: Any, value: int) -> None:
    chunk.ref_cnt = value


def capture_workload(requests: int, capacity: int, seed: int = 11) -> list[tuple[str, Any]]:
    from policyspec.guard import load_target
    from policyspec.vllm.manager import OffloadingManagerEmulation
    from policyspec.vllm.traffic import TrafficConfig, drive

    capture = _Capture(load_target(REFERENCE_033)(cache_capacity=capacity))
    manager = OffloadingManagerEmulation(capture, capacity, listener=capture)
    drive(manager, TrafficConfig(seed=seed, requests=requests))
    return capture.trace


def replay_seconds(make: Callable[[], Any], trace: list[tuple[str, Any]]) -> float:
    """Process CPU time of the replay (``replay_split``)."""
    return replay_split(make, trace)[0]


def replay_split(make: Callable[[], Any], trace: list[tuple[str, Any]]) -> tuple[float, float]:
    """Process CPU time of the replay, closing flush included, and the
    part of it the guard spent encoding batches (0 for a bare policy)."""
    policy = make()
    bound = [(_write if name == "" else getattr(policy, name), args) for name, args in trace]
    started = time.process_time()
    for fn, args in bound:
        fn(*args)
    close = getattr(policy, "close", None)
    if close is not None:
        close()  # the last flush belongs to the guard's cost
    return time.process_time() - started, float(getattr(policy, "encoding_seconds", 0.0))


class _Forward:
    """A wrapper that records nothing: each call passes straight on to the
    policy through one Python method, as the guard's do (module doc)."""

    def __init__(self, policy: Any) -> None:
        self._get = policy.get
        self._insert = policy.insert
        self._remove = policy.remove
        self._touch = policy.touch
        self._evict = policy.evict
        self._clear = policy.clear
        self._mark_e = policy.mark_evictable
        self._mark_ne = policy.mark_non_evictable
        self._store_miss = policy.on_store_miss
        self._access = policy.on_request_access
        self._finish = policy.on_request_finished

    def get(self, key: Any) -> Any:
        return self._get(key)

    def insert(self, key: Any, chunk: Any, req_context: Any = None) -> None:
        self._insert(key, chunk, req_context)

    def remove(self, key: Any) -> None:
        self._remove(key)

    def touch(self, keys: Any, req_context: Any = None) -> None:
        self._touch(keys, req_context)

    def evict(self, n: int, protected: Any) -> Any:
        return self._evict(n, protected)

    def clear(self) -> None:
        self._clear()

    def mark_evictable(self, key: Any) -> None:
        self._mark_e(key)

    def mark_non_evictable(self, key: Any) -> None:
        self._mark_ne(key)

    def on_store_miss(self, keys: Any, req_context: Any) -> None:
        self._store_miss(keys, req_context)

    def on_request_access(self, keys: Any, req_context: Any) -> None:
        self._access(keys, req_context)

    def on_request_finished(self, key_groups: Any, insertion_only_keys: Any, reused_keys: Any,
                            req_context: Any) -> None:
        self._finish(key_groups, insertion_only_keys, reused_keys, req_context)


_BUFFER = 8192
"""Records a recorder holds before it writes them (``guard._BUFFER``)."""


class _Keep(_Forward):
    """A wrapper that keeps, per call, only what a record must hold and only
    the call can read (the operation, the key objects, the chunk and its
    ``ref_cnt``, a copy of a key list, the request object), appended as a
    tuple to a list: no ids, no text, no writes. The floor under any
    recorder written in Python that keeps a tuple per call, however its
    encoding is arranged (in batches, on another thread). It holds the
    last ``_BUFFER`` calls (a deque's C append drops the oldest), as a
    recorder hands its buffer on: a list of hundreds of thousands of tuples
    costs more than the calls themselves in garbage-collector passes."""

    def __init__(self, policy: Any) -> None:
        super().__init__(policy)
        self.kept: deque[tuple[Any, ...]] = deque(maxlen=_BUFFER)
        self._keep = self.kept.append

    def get(self, key: Any) -> Any:
        chunk = self._get(key)
        self._keep((0, key, chunk, None if chunk is None else chunk.ref_cnt))
        return chunk

    def insert(self, key: Any, chunk: Any, req_context: Any = None) -> None:
        ref = chunk.ref_cnt
        self._insert(key, chunk, req_context)
        self._keep((1, key, chunk, ref, req_context))

    def remove(self, key: Any) -> None:
        self._remove(key)
        self._keep((2, key))

    def touch(self, keys: Any, req_context: Any = None) -> None:
        kept = tuple(keys)
        self._touch(kept, req_context)
        self._keep((3, kept))

    def evict(self, n: int, protected: Any) -> Any:
        kept = tuple(protected)
        result = self._evict(n, protected)
        self._keep((4, n, kept, None if result is None else
                    [(key, chunk, chunk.ref_cnt) for key, chunk in result]))
        return result

    def clear(self) -> None:
        self._clear()
        self._keep((5,))

    def mark_evictable(self, key: Any) -> None:
        self._mark_e(key)
        self._keep((6, key))

    def mark_non_evictable(self, key: Any) -> None:
        self._mark_ne(key)
        self._keep((7, key))

    def on_store_miss(self, keys: Any, req_context: Any) -> None:
        kept = tuple(keys)
        self._store_miss(kept, req_context)
        self._keep((8, kept, req_context))

    def on_request_access(self, keys: Any, req_context: Any) -> None:
        kept = tuple(keys)
        self._access(kept, req_context)
        self._keep((9, kept, req_context))

    def on_request_finished(self, key_groups: Any, insertion_only_keys: Any, reused_keys: Any,
                            req_context: Any) -> None:
        self._finish(key_groups, insertion_only_keys, reused_keys, req_context)
        self._keep((10, [tuple(group) for group in key_groups], tuple(insertion_only_keys),
                    tuple(reused_keys), req_context))


class _Flat(_Forward):
    """A wrapper that keeps each call's values one by one in a flat list
    (an operation code, the keys, ``id()`` of the chunk and of the request,
    ``ref_cnt``, the lengths of the key lists): no tuple per call, so
    nothing new for the garbage collector to scan, as ``_Keep``'s tuples
    are. Every ``_BUFFER`` calls it hands the list on as bytes (``pickle``,
    written to ``os.devnull``), as a guard would that leaves the encoding,
    the history file and the judging to a second process. The floor under
    such a guard in the policy's process; what the second process would
    spend (one Python step per call, on another core) is not in it."""

    def __init__(self, policy: Any) -> None:
        super().__init__(policy)
        self.values: list[Any] = []
        self._put = self.values.append
        self._extend = self.values.extend
        self._calls = 0
        self._sink = open(os.devnull, "wb")  # noqa: SIM115  # closed by close()

    def _called(self) -> None:
        self._calls += 1
        if self._calls % _BUFFER == 0:
            self.hand_on()

    def hand_on(self) -> None:
        """What a guard would send to its second process: the values as
        bytes, the list then emptied."""
        self._sink.write(pickle.dumps(self.values, pickle.HIGHEST_PROTOCOL))
        self.values.clear()

    def close(self) -> None:
        self.hand_on()
        self._sink.close()

    def get(self, key: Any) -> Any:
        chunk = self._get(key)
        put = self._put
        put(0)
        put(key)
        if chunk is not None:
            put(id(chunk))
            put(chunk.ref_cnt)
        else:
            put(None)
        self._called()
        return chunk

    def insert(self, key: Any, chunk: Any, req_context: Any = None) -> None:
        ref = chunk.ref_cnt
        self._insert(key, chunk, req_context)
        put = self._put
        put(1)
        put(key)
        put(id(chunk))
        put(ref)
        put(id(req_context))
        self._called()

    def remove(self, key: Any) -> None:
        self._remove(key)
        self._put(2)
        self._put(key)
        self._called()

    def touch(self, keys: Any, req_context: Any = None) -> None:
        kept = tuple(keys)
        self._touch(kept, req_context)
        self._keys(3, kept, req_context)

    def evict(self, n: int, protected: Any) -> Any:
        put = self._put
        put(4)
        put(n)
        self._list(protected)
        result = self._evict(n, protected)
        if result is None:
            put(None)
        else:
            put(len(result))
            for key, chunk in result:
                put(key)
                put(id(chunk))
                put(chunk.ref_cnt)
        self._called()
        return result

    def clear(self) -> None:
        self._clear()
        self._put(5)
        self._called()

    def mark_evictable(self, key: Any) -> None:
        self._mark_e(key)
        self._put(6)
        self._put(key)
        self._called()

    def mark_non_evictable(self, key: Any) -> None:
        self._mark_ne(key)
        self._put(7)
        self._put(key)
        self._called()

    def on_store_miss(self, keys: Any, req_context: Any) -> None:
        kept = tuple(keys)
        self._store_miss(kept, req_context)
        self._keys(8, kept, req_context)

    def on_request_access(self, keys: Any, req_context: Any) -> None:
        kept = tuple(keys)
        self._access(kept, req_context)
        self._keys(9, kept, req_context)

    def on_request_finished(self, key_groups: Any, insertion_only_keys: Any, reused_keys: Any,
                            req_context: Any) -> None:
        self._finish(key_groups, insertion_only_keys, reused_keys, req_context)
        self._put(10)
        self._put(id(req_context))
        self._put(len(key_groups))
        for group in key_groups:
            self._list(group)
        self._list(insertion_only_keys)
        self._list(reused_keys)
        self._called()

    def _keys(self, code: int, keys: Any, req_context: Any) -> None:
        self._put(code)
        self._put(id(req_context))
        self._list(keys)
        self._called()

    def _list(self, keys: Any) -> None:
        """A key list's length, then its keys (a set's in its own order)."""
        self._put(len(keys))
        self._extend(keys)


def guard_cost(requests: int, capacity: int, repeats: int, directory: Path
               ) -> tuple[int, dict[str, list[float]], list[float]]:
    """Policy calls, the replay times of each variant, and record mode's
    encoding time in each round."""
    from policyspec.guard import GuardPolicy, load_target

    trace = capture_workload(requests, capacity)
    cls = load_target(REFERENCE_033)
    makers: dict[str, Callable[[], Any]] = {
        "bare": lambda: cls(cache_capacity=capacity),
        "wrapper": lambda: _Forward(cls(cache_capacity=capacity)),
        "keep": lambda: _Keep(cls(cache_capacity=capacity)),
        "flat": lambda: _Flat(cls(cache_capacity=capacity)),
        "record": lambda: GuardPolicy(capacity, target=cls, mode="record",
                                      history=directory / "record.jsonl"),
        "check": lambda: GuardPolicy(capacity, target=cls, mode="check",
                                     history=directory / "check.jsonl"),
    }
    times: dict[str, list[float]] = {name: [] for name in makers}
    encoding: list[float] = []
    for _ in range(repeats):
        for name, make in makers.items():
            seconds, encoded = replay_split(make, trace)
            times[name].append(seconds)
            if name == "record":
                encoding.append(encoded)
    calls = sum(1 for name, _ in trace if name)
    return calls, times, encoding


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.history", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--copies", type=int, default=10, help="the long history's copies")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--requests", type=int, default=4000,
                        help="requests of the guard-cost workload")
    parser.add_argument("--sections", default="1,2,3", help="which sections to run (1,2,3)")
    parser.add_argument("--out", help="also write the report to this file")
    args = parser.parse_args(argv)
    sections = set(args.sections.split(","))
    lines: list[str] = []

    def say(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    say(f"policyspec history benchmarks, Python {sys.version.split()[0]}, {os.cpu_count()} "
        f"CPUs, load average {os.getloadavg()[0]:.1f} at the start")
    with tempfile.TemporaryDirectory(prefix="policyspec-history-") as tmp:
        directory = Path(tmp)
        short = directory / "1m.jsonl"
        recorded, wall = record_history(short, args.calls)
        size = short.stat().st_size
        say(f"1. check-history speed: {recorded:,} calls of {REFERENCE} recorded behind the "
            f"emulated 0.33 manager (capacity 64) in {wall:.1f} s wall, {size / 1e6:.1f} MB "
            f"({size / recorded:.1f} bytes per call); median of {args.repeats} passes, "
            "process CPU time")
        for profiles in (("core",), ("core", "lru")) if "1" in sections else ():
            calls, rates = judge_speed(short, profiles, args.repeats)
            say(f"   {'+'.join(profiles):<9} {statistics.median(rates):>12,.0f} calls/s   "
                f"(min {min(rates):,.0f}, max {max(rates):,.0f}; {calls:,} calls)")
        for target, profile in (("policyspec.reference.lru033:LRU033CachePolicy", "lru-0.33"),
                                ("policyspec.reference.arc:ARCCachePolicy", "arc")):
            if "1" not in sections:
                break
            model_path = directory / f"{profile}.jsonl"
            from policyspec.commands.record import record

            record(target, str(model_path), calls=args.calls // 5, seed=7, capacity=64)
            calls, rates = judge_speed(model_path, (profile,), max(args.repeats // 2, 1))
            say(f"   {profile:<9} {statistics.median(rates):>12,.0f} calls/s   (the model judge, "
                f"on {calls:,} calls of {target.rsplit(':', 1)[1]}, which conforms)")
        say("   target: >= 1,000,000 calls/s under core\n")

        long = directory / "long.jsonl"
        if "2" in sections:
            written = repeat_history(short, long, args.copies)
            say(f"2. Memory: the judge in a fresh process (peak resident set, VmHWM), the 1 M "
                f"history against {args.copies} copies of it ({written:,} records, each copy "
                "after a clear)")
            for label, path in (("1x", short), (f"{args.copies}x", long)):
                for named in ("core", "core,lru"):
                    calls, passed, seconds, peak = judge_in_child(path, named)
                    say(f"   {label:<4} {named:<9} {calls:>12,} calls  peak {peak / 1024:7.1f} "
                        f"MB  {calls / seconds:>11,.0f} calls/s  "
                        f"{'conforms' if passed else 'FAILS'}")
            long.unlink(missing_ok=True)
            say("   target: the peak flat from 1x to 10x\n")
        if "3" in sections:
            _guard_section(args, directory, say)
    say(f"(load average {os.getloadavg()[0]:.1f} at the end)")
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


def _guard_section(args: argparse.Namespace, directory: Path, say: Callable[[str], None]) -> None:
    calls, times, encoding = guard_cost(args.requests, 64, args.repeats, directory)
    bare = statistics.median(times["bare"])
    say(f"3. Guard cost on the manager workload: {calls:,} policy calls of {REFERENCE_033} "
        f"({args.requests} requests, capacity 64) replayed in {args.repeats} alternating "
        "rounds; median process CPU time of the replay loop, every buffered write and the closing "
        "flush included")
    for name, values in times.items():
        median = statistics.median(values)
        say(f"   {name:<7} {median:7.3f} s  {median / calls * 1e9:6.0f} ns per call  "
            f"x{median / bare:.2f} of bare   (runs: "
            f"{', '.join(f'{v:.3f}' for v in values)})")
    hot = statistics.median([t - e for t, e in zip(times["record"], encoding, strict=True)])
    batches = statistics.median(encoding)
    if batches > 0:  # a guard that encodes in batches (encoding_seconds)
        say(f"   record, split: the calls themselves (hot path) {hot / calls * 1e9:.0f} ns per "
            f"call x{hot / bare:.2f} of bare; the batch encoding {batches / calls * 1e9:.0f} "
            "ns per call (paid by one call in 8192)")
    say("   target: record adds at most 50% to the policy's own call time (the total above)")


if __name__ == "__main__":
    sys.exit(main())
