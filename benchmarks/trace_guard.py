"""``python -m benchmarks.trace_guard [TRACE]``: what ``policyspec.guard``
costs a user, in vLLM's manager's time, on a serving trace. Needs vLLM
0.33.0 installed: run it with the venv of .ci/vllm033.sh
(``.venv-vllm033/bin/python -m benchmarks.trace_guard``).

vLLM's real ``CPUOffloadingManager`` plays the trace (``policyspec.workload``'s
player, vLLM's own ``ReqContext``) around its in-tree LRU four ways, side
by side in one process, in ``--rounds`` rounds whose order rotates:

* ``bare``: ``cache_policy="lru"``;
* ``wrapper``: the same LRU behind ``benchmarks.history._Forward``, one
  Python method per call that records nothing;
* ``keep``: behind ``benchmarks.history._Keep``, the floor under a
  recorder in Python that holds a tuple per call (it keeps each call's
  objects and writes nothing);
* ``flat``: behind ``benchmarks.history._Flat``, the floor under a guard
  whose encoding runs in a second process (each call's values appended
  flat, handed on as bytes);
* ``record`` and ``check``: ``cache_policy="GuardPolicy"``,
  ``cache_policy_module_path="policyspec.guard"``, the guard around vLLM's
  LRU (``POLICYSPEC_GUARD_TARGET``) writing its history to a temporary
  directory, in each mode; its closing flush counts;
* ``check-process``: check mode with its judge in a second process
  (``POLICYSPEC_GUARD_JUDGE=process``); the close, which waits for the
  judge to finish, counts (in the wall time: the CPU time is this
  thread's);
* with ``--c``, ``c-forward`` and ``c-record``: behind the prototype
  recorder of ``benchmarks/crecord.c``, compiled for the run (a C compiler
  and Python's headers needed), forwarding only, then recording (the
  floor under a guard whose record path is C, keeping the guard's maps
  and writing fixed-width binary records, encoded nowhere).

The figure is the manager's wall time: ``time.perf_counter`` summed over
every call the player makes of the manager (its lookups, loads, stores,
completions and finishes; the policy's calls are inside them), so the
player's own work is left out; beside it the CPU time of the same calls
(``time.thread_time``), which a busy machine disturbs less. Medians of the
rounds. Targets: record adds at most 10% to the bare manager's time, check
at most 30%, and record's extra is at most twice the keep floor's.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from itertools import islice
from pathlib import Path
from typing import Any

TARGET = "vllm.v1.kv_offload.cpu.policies.lru:LRUCachePolicy"
VARIANTS = ("bare", "wrapper", "keep", "flat", "record", "check", "check-process")
C_VARIANTS = ("c-forward", "c-record")
_C: dict[str, Any] = {}
"""The compiled prototype (``crecord``) and its sink, set by ``compile_c``."""


class TimedManager:
    """The manager behind two clocks: the wall seconds spent in its calls,
    and the CPU seconds of this thread in them (which a busy machine
    changes less)."""

    def __init__(self, manager: Any) -> None:
        self.manager = manager
        self.seconds = 0.0
        self.cpu = 0.0

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self.manager, name)
        clock, cpu = time.perf_counter, time.thread_time

        def timed(*args: Any) -> Any:
            started, used = clock(), cpu()
            try:
                return method(*args)
            finally:
                self.seconds += clock() - started
                self.cpu += cpu() - used

        return timed


def build(variant: str, capacity: int, directory: Path, round_: int) -> Any:
    from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager

    from benchmarks.history import _Flat, _Forward, _Keep

    wrappers: dict[str, Callable[[Any], Any]] = {"wrapper": _Forward, "keep": _Keep, "flat": _Flat}
    if _C:
        recorder, sink = _C["module"].Recorder, _C["sink"]
        wrappers["c-forward"] = lambda policy: recorder(policy, sink, 1)
        wrappers["c-record"] = lambda policy: recorder(policy, sink, 0)
    if variant == "bare" or variant in wrappers:
        manager = CPUOffloadingManager(capacity, cache_policy="lru")
        if variant in wrappers:
            manager._policy = wrappers[variant](manager._policy)
        return manager
    mode, _, judge = variant.partition("-")
    os.environ.update({
        "POLICYSPEC_GUARD_TARGET": TARGET,
        "POLICYSPEC_GUARD_MODE": mode,
        "POLICYSPEC_GUARD_JUDGE": judge or "inline",
        "POLICYSPEC_GUARD_HISTORY": str(directory / f"{variant}-{round_}.jsonl"),
    })
    return CPUOffloadingManager(capacity, cache_policy="GuardPolicy",
                                cache_policy_module_path="policyspec.guard")


def _compiler() -> list[str]:
    """The C compiler Python was built with, as a command."""
    return (sysconfig.get_config_var("CC") or "cc").split()


def can_compile_c() -> bool:
    """Whether ``compile_c`` can work here: a C compiler and Python's headers."""
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    return shutil.which(_compiler()[0]) is not None and headers.exists()


def compile_c(directory: Path) -> None:
    """Compile ``benchmarks/crecord.c`` into ``directory`` with ``_compiler``,
    import it, and open the sink its records go to (``os.devnull``)."""
    source = Path(__file__).with_name("crecord.c")
    out = directory / f"crecord{sysconfig.get_config_var('EXT_SUFFIX')}"
    include = sysconfig.get_paths()["include"]
    subprocess.run([*_compiler(), "-O2", "-shared", "-fPIC", f"-I{include}", str(source), "-o",
                    str(out)], check=True)
    spec = importlib.util.spec_from_file_location("crecord", out)
    assert spec is not None and spec.loader is not None, out
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _C.update(module=module, sink=open(os.devnull, "wb").write)  # noqa: SIM115  # for the run


def freeze_gc_heap() -> None:
    """Freeze the heap as vLLM's engine core does once it has started,
    before it serves (vLLM's own ``vllm.utils.gc_utils.freeze_gc_heap``):
    every object then alive goes to a generation the garbage collector
    never scans, so that its full passes walk what serving made, not
    torch's and vLLM's heap. Without it a full pass over that heap lands in
    some plays and not in others (the bare manager's own time varied by a
    third), and the keep floor's tuples paid for passes over torch that
    vLLM never makes. What the plays import is imported first, to be frozen
    too."""
    for module in ("vllm.v1.kv_offload.cpu.manager", "policyspec.guard",
                   "policyspec.workload.player"):
        importlib.import_module(module)
    from vllm.utils.gc_utils import freeze_gc_heap as freeze

    freeze()


def play_once(variant: str, requests: list[Any], capacity: int, directory: Path,
              round_: int) -> tuple[float, float, int]:
    """The manager's wall and CPU seconds (the guard's closing flush
    added to both), and the policy calls the guard recorded."""
    from vllm.v1.kv_offload.base import ReqContext

    from policyspec.workload.player import Player

    manager = build(variant, capacity, directory, round_)
    gc.collect()  # the garbage of the play before, not this play's to collect
    timed = TimedManager(manager)
    Player(timed, requests, new_context=ReqContext).run()
    policy = manager._policy
    close = getattr(policy, "close", None)
    if close is not None:
        started, used = time.perf_counter(), time.thread_time()
        close()
        timed.seconds += time.perf_counter() - started
        timed.cpu += time.thread_time() - used
    calls = int(getattr(policy, "calls", 0))
    for path in directory.glob(f"{variant}-{round_}.jsonl*"):
        path.unlink()
    return timed.seconds, timed.cpu, calls


def main(argv: list[str] | None = None) -> int:
    from policyspec.workload.reader import read_trace
    from policyspec.workload.sample import sample_path

    parser = argparse.ArgumentParser(prog="python -m benchmarks.trace_guard",
                                     description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("trace", nargs="?", help="a trace (default: the bundled sample)")
    parser.add_argument("--capacity", type=int, default=None,
                        help="cache size in blocks (default 10,000; 1,024 for the sample)")
    parser.add_argument("--requests", type=int, default=None, help="only the first N requests")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--c", action="store_true",
                        help="also the prototype C recorder (benchmarks/crecord.c)")
    args = parser.parse_args(argv)
    variants = VARIANTS + C_VARIANTS if args.c else VARIANTS
    path = args.trace or str(sample_path())
    capacity = args.capacity or (10_000 if args.trace else 1024)
    requests = list(islice(read_trace(path), args.requests))
    build_dir = tempfile.TemporaryDirectory(prefix="policyspec-crecord-") if args.c else None
    if build_dir is not None:
        compile_c(Path(build_dir.name))
    freeze_gc_heap()
    blocks = sum(len(r.blocks) for r in requests)
    print(f"guard cost on vLLM 0.33.0's CPUOffloadingManager, {Path(path).name}: "
          f"{len(requests):,} requests, {blocks:,} blocks, capacity {capacity:,}; "
          f"{args.rounds} rounds; load average {os.getloadavg()[0]:.1f} at the start",
          flush=True)
    seconds: dict[str, list[float]] = {v: [] for v in variants}
    cpu: dict[str, list[float]] = {v: [] for v in variants}
    calls = 0
    with tempfile.TemporaryDirectory(prefix="policyspec-trace-guard-") as tmp:
        directory = Path(tmp)
        for round_ in range(args.rounds):
            turn = round_ % len(variants)
            order = variants[turn:] + variants[:turn]
            for variant in order:
                wall, used, recorded = play_once(variant, requests, capacity, directory, round_)
                seconds[variant].append(wall)
                cpu[variant].append(used)
                calls = max(calls, recorded)
    print(f"   {calls:,} policy calls per play (the guard's count)")
    for name, figures in (("wall", seconds), ("CPU", cpu)):
        bare = statistics.median(figures["bare"])
        for variant in variants:
            median = statistics.median(figures[variant])
            runs = ", ".join(f"{s:.3f}" for s in figures[variant])
            print(f"   {variant:<13} manager {name:<4} {median:7.3f} s  "
                  f"{median / bare - 1:+7.1%} of bare   (runs: {runs})")
        keep, record, check, process = (statistics.median(figures[v]) for v in (
            "keep", "record", "check", "check-process"))
        floor = keep - bare
        print(f"   {name}: record adds {record / bare - 1:.1%} (target <= 10%), check "
              f"{check / bare - 1:.1%} (target <= 30%), with its judge in a second process "
              f"{process / bare - 1:.1%}; record's extra is "
              f"{(record - bare) / floor if floor > 0 else 0:.2f}x the keep floor's (target <= 2)")
        if args.c:
            compiled = statistics.median(figures["c-record"])
            print(f"   {name}: the C recorder adds {compiled / bare - 1:.1%}; its extra is "
                  f"{(compiled - bare) / floor if floor > 0 else 0:.2f}x the keep floor's")
    print(f"(load average {os.getloadavg()[0]:.1f} at the end)")
    gc.unfreeze()  # as vLLM's engine core at shutdown: the last collection frees what was frozen
    if build_dir is not None:
        build_dir.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
