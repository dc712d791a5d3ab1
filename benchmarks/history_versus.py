"""``python -m benchmarks.history_versus [--ref main]``: the guard and the
core judge of a git ref beside this tree's, alternating in one process, so
that a speed-up is a ratio measured side by side (a shared machine's load
moves every absolute figure).

REF's ``src/policyspec/guard.py`` and ``src/policyspec/history/core.py``
are loaded as modules of their own (``git show``); everything else is this
tree's. Three measurements, medians of ``--repeats`` alternating rounds of
process CPU time: the guard's cost on the manager workload (section 3 of
``benchmarks.history``); the judge on a recorded 1 M-call history (section
1), ``judge_paths`` with each ``CoreJudge``; the judge on a history of
distinct keys (every key new, as vLLM's hashes are: its absent keys fill
the judge's memory of them).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from benchmarks.history import REFERENCE_033, capture_workload, record_history, replay_split


def load_from_ref(ref: str, path: str, name: str, directory: Path) -> ModuleType:
    """The module at ``path`` as ``ref`` has it."""
    source = subprocess.run(["git", "show", f"{ref}:{path}"], check=True, capture_output=True,
                            text=True).stdout
    file = directory / f"{name}.py"
    file.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _medians(makers: dict[str, Callable[[], float]], repeats: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in makers}
    for _ in range(repeats):
        for name, run in makers.items():
            times[name].append(run())
    return {name: statistics.median(values) for name, values in times.items()}


def guard_versus(old: ModuleType, ref: str, repeats: int, directory: Path,
                 say: Callable[[str], None]) -> None:
    import policyspec.guard as new

    trace = capture_workload(4000, 64)
    cls = new.load_target(REFERENCE_033)
    makers: dict[str, Callable[[], Any]] = {"bare": lambda: cls(cache_capacity=64)}
    for mode in ("record", "check"):
        for label, module in ((ref, old), ("this tree", new)):
            makers[f"{mode} ({label})"] = (
                lambda m=module, mo=mode, la=label: m.GuardPolicy(
                    64, target=cls, mode=mo, history=directory / f"{mo}-{la}.jsonl"))
    hot: dict[str, list[float]] = {name: [] for name in makers}

    def run(name: str, make: Callable[[], Any]) -> float:
        seconds, encoding = replay_split(make, trace)
        hot[name].append(seconds - encoding)
        return seconds

    medians = _medians({name: (lambda na=name, mk=make: run(na, mk))
                        for name, make in makers.items()}, repeats)
    calls = sum(1 for name, _ in trace if name)
    bare = medians["bare"]
    say(f"1. Guard cost, {calls:,} calls of {REFERENCE_033} (the section 3 workload): the "
        "total, every buffered write and the closing flush included; for a guard that encodes in "
        "batches, also its calls alone (the total less its encoding_seconds)")
    for name, seconds in medians.items():
        say(f"   {name:<22} {seconds:6.3f} s  {seconds / calls * 1e9:5.0f} ns per call  "
            f"x{seconds / bare:.2f} of bare")
        alone = statistics.median(hot[name])
        if name != "bare" and alone < seconds:
            say(f"   {'  hot path':<22} {alone:6.3f} s  {alone / calls * 1e9:5.0f} ns per call  "
                f"x{alone / bare:.2f} of bare")
    same = (directory / f"record-{ref}.jsonl").read_bytes() == \
        (directory / "record-this tree.jsonl").read_bytes()
    say(f"   the two record-mode histories are {'byte-identical' if same else 'DIFFERENT'}")


def _distinct_history(path: Path, keys: int) -> None:
    """Insert, make idle, evict the oldest: every key new (capacity 64)."""
    from policyspec.history import format as fmt

    lines = [json.dumps(fmt.header(capacity=64, target="distinct", api="R9", mode="record"))]
    for k in range(keys):
        lines += [f"[1,{k},{k % 64},-1,-1,0]", f"[6,{k},0]"]
        if k >= 63:
            lines.append(f"[4,1,[],[{k - 63},{(k - 63) % 64},0]]")
    path.write_text("\n".join(lines) + "\n", encoding="ascii")


def judge_versus(old: ModuleType, ref: str, repeats: int, directory: Path, calls: int,
                 say: Callable[[str], None]) -> None:
    import policyspec.history.judge as judge

    new = judge.CoreJudge
    recorded = directory / "1m.jsonl"
    record_history(recorded, calls)
    distinct = directory / "distinct.jsonl"
    _distinct_history(distinct, 150_000)
    say("2. check-history (judge_paths), calls per second of process CPU time")
    for label, path in (("recorded 1 M", recorded), ("distinct keys", distinct)):
        for profiles in (("core",), ("core", "lru")):
            counted: dict[str, int] = {}

            def run(cls: Any, name: str, p: Path = path, pr: tuple[str, ...] = profiles,
                    counted: dict[str, int] = counted) -> float:
                judge.CoreJudge = cls
                started = time.process_time()
                verdict = judge.judge_paths([p], pr)
                seconds = time.process_time() - started
                judge.CoreJudge = new
                if not verdict.passed:
                    raise RuntimeError(f"{p.name} does not conform to {pr}")
                counted[name] = verdict.calls
                return seconds

            medians = _medians({ref: lambda: run(old.CoreJudge, ref),
                                "this tree": lambda: run(new, "this tree")}, repeats)
            rates = {name: counted[name] / s for name, s in medians.items()}
            say(f"   {label:<14} {'+'.join(profiles):<9} {ref}: {rates[ref]:>11,.0f}   "
                f"this tree: {rates['this tree']:>11,.0f}   "
                f"x{rates['this tree'] / rates[ref]:.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.history_versus",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ref", default="main")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--calls", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    print(f"{args.ref} against this tree, load average {os.getloadavg()[0]:.1f} at the start",
          flush=True)
    with tempfile.TemporaryDirectory(prefix="policyspec-versus-") as tmp:
        directory = Path(tmp)
        old_guard = load_from_ref(args.ref, "src/policyspec/guard.py", "ref_guard", directory)
        old_core = load_from_ref(args.ref, "src/policyspec/history/core.py", "ref_core",
                                 directory)

        def say(line: str) -> None:
            print(line, flush=True)

        guard_versus(old_guard, args.ref, args.repeats, directory, say)
        judge_versus(old_core, args.ref, args.repeats, directory, args.calls, say)
    print(f"(load average {os.getloadavg()[0]:.1f} at the end)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
