"""``python -m benchmarks``: every measurement, printed as a report.

Run from the repository root (with the project installed, e.g. the venv of
README.md). Engines get work units, never seconds: every size below is a
count of work. ``--short`` shrinks every section for a smoke run of a few
minutes, ``--tiny`` to the smallest (the test suite's size: it proves that
each section runs, its figures mean nothing); ``--deep`` adds the deep budget;
``--only`` picks sections; ``--trace`` is Mooncake's conversation trace for
the simulate sections (without it they play the bundled sample); ``--out``
also writes the report to a file (benchmarks/results.txt holds one run).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

SECTIONS = ("engines", "budgets", "lru", "memory", "jobs", "detection", "prove", "simulate",
            "grid")


TINY_DETECTION = "evict_returns_iterator"
TINY_PROVE = "v01_ignores_protected"
"""The corpus files of the small sizes' detection (tiny) and prove (tiny and
short) sections: caught within seconds, so that a smoke run stays short."""


def _size(args: argparse.Namespace) -> str:
    return "tiny" if args.tiny else "short" if args.short else "full"


def _pick(args: argparse.Namespace, tiny: object, short: object, full: object) -> Any:
    """The value of this run's size."""
    return {"tiny": tiny, "short": short, "full": full}[_size(args)]


def _engines(args: argparse.Namespace, say: Callable[[str], None]) -> None:
    from benchmarks.cost_split import format_split
    from benchmarks.engine_speed import (
        SPLIT_EXAMPLES,
        EngineSpeed,
        fast_examples,
        fast_split,
        measure_engines,
    )

    units = _pick(args, 0.01, 0.1, args.units)
    repeats = _pick(args, 1, 1, args.repeats)
    depth = _pick(args, 2, 2, 3)
    say(f"1. Checked calls per CPU second on the reference LRU, against raw replay of the "
        f"same engine's calls\n   ({units:g} work units per engine run: the fast engine's "
        f"{fast_examples(units):,} examples in segments; the exhaustive engine to depth {depth}; "
        f"median of {repeats} run(s))\n")
    say(f"   {'engine':<15}{'subject':<10}{'profile':<9}{'checked/s':>12}{'raw/s':>12}"
        f"{'ratio':>8}{'calls/run':>12}{'runs':>6}")

    def row(speed: EngineSpeed) -> None:
        checked = statistics.median(speed.checked)
        calls = sorted(speed.calls)[len(speed.calls) // 2]
        ratio = speed.ratio
        raw = f"{statistics.median(speed.raw):>12,.0f}" if ratio is not None else f"{'-':>12}"
        shown = f"{ratio:>8.2f}" if ratio is not None else f"{'-':>8}"
        say(f"   {speed.engine:<15}{speed.subject:<10}{speed.profile:<9}{checked:>12,.0f}{raw}"
            f"{shown}{calls:>12,}{len(speed.checked):>6}")

    speeds = measure_engines(units, repeats, exhaustive_depth=depth, progress=row)
    for speed in speeds:
        if speed.hooks:
            share = sum(speed.hooks) / sum(speed.calls)
            say(f"   {speed.engine} on {speed.subject}: {share:.1%} of its checked calls are "
                "request hooks (the rest: the manager's lookups and writes, stores, loads, "
                "evictions, checks)")
    for speed in speeds:
        if speed.engine == "fast" and speed.ratio is not None:
            verdict = "met" if speed.ratio >= 0.5 else "missed"
            say(f"   fast, {speed.profile}: ratio {speed.ratio:.2f} (goal >= 0.5: {verdict}); "
                f"split of its time (one profiled run of "
                f"{min(fast_examples(units), SPLIT_EXAMPLES)} examples): "
                f"{format_split(fast_split(speed.profile, fast_examples(units)))}")
    say("   goals: the fast engine's ratio >= 0.5 in lru and in core; with request traffic "
        "(vLLM 0.33's\n   manager: requests and hooks; lru@R9 is the reference LRU at R9, "
        "lru-0.33 LRU033CachePolicy)\n   >= 200,000 checked calls per CPU second\n")


def _budgets(args: argparse.Namespace, say: Callable[[str], None]) -> None:
    from benchmarks.budgets import measure_budget

    names: list[str | float] = _pick(args, [0.2], [2.0], ["quick", "standard"])
    if args.deep:
        names.append("deep")
    say("2. What each --budget covers (policyspec check --profile lru on the reference LRU, --jobs "
        "= every core, wall clock, one run each)\n")
    say(f"   {'budget':<10}{'seconds':>9}{'calls':>12}{'steps':>11}{'examples':>10}  per engine "
        "(calls/examples)")
    for name in names:
        stats = measure_budget(name)
        engines = ", ".join(f"{e} {s['calls']:,}/{s['examples']:,}"
                            for e, s in stats["engines"].items())
        label = name if isinstance(name, str) else f"{name:g} units"
        say(f"   {label:<10}{stats['seconds']:>9.1f}{stats['calls']:>12,}{stats['steps']:>11,}"
            f"{stats['examples']:>10,}  {engines}  [{stats['verdict']}]")
    say("   target: standard covers at least 1,000,000 checked calls\n")


def _lru(args: argparse.Namespace, say: Callable[[str], None]) -> None:
    from benchmarks.lru_vs_seed import compare_in_processes
    from benchmarks.workload import Workload

    repeats = _pick(args, 1, 1, max(args.repeats, 9))
    processes = _pick(args, 1, 1, max(args.repeats, 5))
    workload = _pick(args, Workload(requests=20), Workload(requests=200), Workload())
    results = compare_in_processes(processes, repeats, workload)
    first = results[0]
    say(f"3. Reference LRU against the seed-design baseline (benchmarks/seed_design_lru.py) on "
        f"a realistic workload\n   ({workload.requests} requests over {workload.prefixes} "
        f"shared prefixes, capacity {workload.capacity}, {workload.concurrent} requests in "
        f"flight;\n   {first.calls:,} policy calls and {first.steps - first.calls:,} "
        f"ref_cnt writes; in each of {processes} fresh processes, the median of {repeats} "
        f"alternating replays)\n")
    for index, result in enumerate(results, 1):
        ref = statistics.median(result.reference)
        base = statistics.median(result.baseline)
        say(f"   process {index}: reference {ref:6.3f} s ({ref / result.steps * 1e9:4.0f} ns per "
            f"step), seed design {base:6.3f} s, ratio {result.ratio:.2f}")
    overall = statistics.median(result.ratio for result in results)
    say(f"   ratio baseline/reference, median over the processes: {overall:.2f}   "
        f"(target >= 1.0)\n")


def _memory(args: argparse.Namespace, say: Callable[[str], None]) -> None:
    from benchmarks.memory import measure_memory

    units, examples = _pick(args, (0.02, 2), (0.05, 2), (2.0, 20))
    say("4. Peak memory (tracemalloc), a short run against a ten times longer one (work units "
        "and examples)\n")
    for use in measure_memory(units, examples):
        say(f"   {use.what}")
        say(f"     peak {use.short[0] / 1e6:7.1f} MB -> {use.long[0] / 1e6:7.1f} MB "
            f"(ratio {use.ratio:.2f}; added by the run itself {use.short[1] / 1e6:.1f} MB -> "
            f"{use.long[1] / 1e6:.1f} MB)")
    say("   target: ratio <= 1.2\n")


def _jobs(args: argparse.Namespace, say: Callable[[str], None]) -> None:
    from benchmarks.jobs import measure_jobs

    budget, repeats = _pick(args, (0.2, 1), (2.0, 1), ("standard", args.repeats))
    say(f"5. --jobs 1 against --jobs 2 (policyspec check --profile lru on the reference LRU, "
        f"budget {budget if isinstance(budget, str) else f'{budget:g} units'}, alternating, "
        f"median of {repeats}; wall clock)\n")
    rates = measure_jobs(budget, repeats)
    for rate in rates:
        say(f"   --jobs {rate.jobs}: {statistics.median(rate.rates):>12,.0f} checked calls per "
            f"wall second  [{', '.join(sorted(rate.verdicts))}]")
    if len(rates) == 2:
        ratio = statistics.median(rates[1].rates) / statistics.median(rates[0].rates)
        say(f"   ratio {ratio:.2f}   (target >= 1.8, same verdict)\n")


def _detection(args: argparse.Namespace, say: Callable[[str], None]) -> None:
    from benchmarks.detection import corpus, measure_detection

    files = corpus()
    budgets: tuple[float | str, ...] = _pick(args, (0.2,), (1.0,), None) or tuple(
        b if b in ("quick", "standard", "deep") else float(b)
        for b in args.detection_budgets.split(","))
    runnable = [f for f in files if f.runnable]
    say(f"6. Detection over the faulty corpus ({len(runnable)} files checked as a user would, "
        f"every default engine, --jobs 1, seed 0, at the header's capacity if it names one;\n   "
        f"{len(files) - len(runnable)} more need a non-default engine and are left out; "
        "times are wall clock)\n")
    say(f"   {'budget':<9}{'caught':>8}   found after (median / worst)   failing run wall "
        "(median / worst)   trace steps (median / max)   missed")
    # tiny: one file a user's check catches at once (the size proves the section runs)
    quickest = [f for f in runnable if f.path.stem == TINY_DETECTION] or runnable[:1]
    for curve in measure_detection(budgets, files=_pick(args, quickest, runnable[:4],
                                                         runnable)):
        found, wall, steps = curve.found_after(), curve.failing_wall(), curve.trace_steps()
        missed = ", ".join(c.name for c in curve.catches if not c.caught) or "-"
        label = f"{curve.budget:g} units" if isinstance(curve.budget, float) else curve.budget
        say(f"   {label:<9}{len(curve.caught):>4}/{len(curve.catches):<3}   {found[0]:8.2f} / "
            f"{found[1]:6.2f} s              {wall[0]:8.1f} / {wall[1]:6.1f} s          "
            f"{steps[0]:6.1f} / {steps[1]:4}                {missed}")
        unsized = curve.trace_steps_unsized()
        worst = curve.longest_any()
        sized = ", ".join(f"{c.name} {c.steps}" for c in curve.caught if c.engine == "size"
                          and (c.steps or 0) > 25)
        slowest = max(curve.caught, key=lambda c: c.wall_s, default=None)
        say(f"             without the size engine's findings: trace steps {unsized[0]:.1f} / "
            f"{unsized[1]}; longest trace of any id shown: "
            + (f"{worst.longest[1]} ({worst.name}, {worst.longest[0]})" if worst else "-")
            + (f"; slowest: {slowest.name}" if slowest else ""))
        say(f"             size-engine witnesses over 25 steps (production sizes): {sized or '-'}")
        calls = curve.found_after_calls()
        say(f"             found after, in checked calls (the same on any machine): median "
            f"{calls[0]:,.0f}, most {calls[1]:,}")
        if args.detection_files:
            for c in curve.catches:
                say(f"               {c.name:<44}{'caught' if c.caught else 'MISSED':<8}"
                    f"{c.engine or '-':<12}{c.steps if c.steps is not None else '-':>6} steps"
                    f"{c.found_after_calls or 0:>12,} calls{c.wall_s:8.1f} s")
    say("   targets at quick: median found after <= 0.5 s; slowest failing run <= 30 s; "
        "trace steps median <= 5, max <= 25\n")


def _prove(args: argparse.Namespace, say: Callable[[str], None]) -> None:
    from benchmarks.prove_corpus import (
        BUDGET_SECONDS,
        CAP_SECONDS,
        HEADER,
        MAX_STEPS,
        measure_prove,
        read_witnesses,
        run_line,
        short_witnesses,
        summary,
    )

    chosen = short_witnesses(read_witnesses())
    quickest = [w for w in chosen if Path(w.path).stem == TINY_PROVE] or chosen[:1]
    chosen = _pick(args, quickest, quickest, chosen)
    budget, cap = _pick(args, (10.0, 30.0), (BUDGET_SECONDS, CAP_SECONDS),
                        (BUDGET_SECONDS, CAP_SECONDS))
    say(f"7. policyspec prove on the corpus files whose check witness has at most {MAX_STEPS} "
        f"steps ({len(chosen)} files, benchmarks/prove_witnesses.txt; --budget "
        f"{budget:g} (prove's budget is CrossHair's wall seconds) --fail-fast,\n   stopped at "
        f"{cap:g} s; found: a "
        "counterexample of the header's id; times are wall clock)\n")
    say(HEADER)
    runs = []
    for run in measure_prove(chosen, budget, cap):
        runs.append(run)
        say(run_line(run, cap))
    say(summary(runs, cap))
    say("   target: every file found within 60 s wall on 2 cores\n")


def _simulate(args: argparse.Namespace, say: Callable[[str], None]) -> None:
    from benchmarks.trace_speed import default_sizes, simulate_lines, simulate_speeds

    trace, users = args.trace_path
    size = default_sizes(users)[1]
    requests = _pick(args, 30, 300, 3000)
    repeats = _pick(args, 1, 1, args.repeats)
    say(f"8. policyspec simulate's calls per CPU second against raw replay of the same calls "
        f"({Path(trace).name}, the first {requests:,} requests at {size:,} blocks; a simulate "
        f"cell and the replay\n   in turn, median of {repeats}; split: one profiled cell, "
        "by step)\n")
    for line in simulate_lines(simulate_speeds(trace, size, requests, repeats)):
        say(line)
    say("   goal: simulate >= 0.8 of raw replay\n")


def _grid(args: argparse.Namespace, say: Callable[[str], None]) -> None:
    from benchmarks.trace_speed import ADAPTIVE, default_sizes, grid_lines, grid_runs

    trace, users = args.trace_path
    sizes = default_sizes(users)
    requests = _pick(args, 30, None, None)
    runs = _pick(args, 1, 1, args.repeats)
    say(f"9. The 3 x 3 grid: policyspec simulate {ADAPTIVE} --trace {Path(trace).name} "
        f"--jobs 2 at {', '.join(f'{n:,}' for n in sizes)} blocks\n   (the slru policy and "
        "the in-tree LRU and ARC; the command in a process of its own; wall clock)\n")
    for line in grid_lines(grid_runs(trace, sizes, 2, runs, ADAPTIVE, requests), trace, users):
        say(line)
    say("")


def main(argv: list[str] | None = None) -> int:
    from benchmarks.trace_speed import TraceMissing, trace_path

    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--short", action="store_true", help="a smoke run of every section "
                        "(a few minutes)")
    parser.add_argument("--tiny", action="store_true", help="every section at its smallest "
                        "size (what the tests run; its figures mean nothing)")
    parser.add_argument("--deep", action="store_true", help="also measure the deep budget")
    parser.add_argument("--only", action="append", choices=SECTIONS, help="run these sections")
    parser.add_argument("--units", type=float, default=1.0,
                        help="work units per engine run (engines section; default 1)")
    parser.add_argument("--repeats", type=int, default=3, help="repetitions for the medians")
    parser.add_argument("--trace", metavar="FILE",
                        help="Mooncake's conversation_trace.jsonl for the simulate and grid "
                        "sections (default: the bundled sample; README.md says how to get it)")
    parser.add_argument("--out", help="also write the report to this file")
    parser.add_argument("--detection-files", action="store_true",
                        help="list every file of the detection curve (engine, steps, calls)")
    parser.add_argument("--detection-budgets", default="1,2,5,quick",
                        help="the budgets of the detection curve, comma-separated")
    args = parser.parse_args(argv)
    if args.units <= 0 or args.repeats < 1:
        print("python -m benchmarks: --units must be above 0 and --repeats at least 1",
              file=sys.stderr)
        return 2
    try:
        args.trace_path = trace_path(args.trace)
    except TraceMissing as missing:
        print(f"python -m benchmarks: {missing}", file=sys.stderr)
        return 2
    lines: list[str] = []

    def say(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    say(f"policyspec benchmarks, {date.today()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load average {load:.1f} at the start, size {_size(args)}")
    say("Engines get work units, never seconds. Times are process CPU time (time waiting for a "
        "CPU does not count) unless a section says wall clock (budgets, jobs, detection, prove, "
        "grid: what a user waits); each section says how many runs its figures are.\n")
    started = time.monotonic()
    chosen = args.only or list(SECTIONS)
    sections: dict[str, Callable[[argparse.Namespace, Callable[[str], None]], None]] = {
        "engines": _engines, "budgets": _budgets, "lru": _lru, "memory": _memory,
        "jobs": _jobs, "detection": _detection, "prove": _prove, "simulate": _simulate,
        "grid": _grid}
    for name in SECTIONS:
        if name in chosen:
            sections[name](args, say)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    say(f"({time.monotonic() - started:.0f} s in all; load average {load:.1f} at the end)")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
