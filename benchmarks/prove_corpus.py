"""``policyspec prove`` over the faulty corpus (tests/faulty/, hooks/ too):
each file whose ``check`` witness has at most ``MAX_STEPS`` steps, found or
not by ``prove`` within a wall-clock cap, and how long it took.

A file is run as a user would: ``policyspec prove FILE:Policy --profile P
--budget B --fail-fast --json-report R`` in a process of its own (``P`` the
header's profile; ``--strict`` when the header's id is a SHOULD), stopped
at the cap. Found: the report names the header's
requirement (or one of its ``also=`` ids) among its failures; any other
counterexample is listed beside it.

The witness lengths are read from ``prove_witnesses.txt`` beside this file,
made once by ``python -m benchmarks.prove_corpus --witnesses``: one
``policyspec check`` run per file, budget quick, ``--jobs 1``, seed 0, at
the header's profile and capacity, with every default engine (as the
detection curve runs them, benchmarks/detection.py, but for every file);
the steps of the trace shown for the header's id. Remake it when the
corpus or the engines change.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from benchmarks.detection import corpus, measure_detection
from policyspec.registry import load_registry

__all__ = ["HEADER", "MAX_STEPS", "ProveRun", "Witness", "compute_witnesses", "measure_prove",
           "read_witnesses", "run_line", "short_witnesses", "summary", "write_witnesses"]

ROOT = Path(__file__).resolve().parent.parent
WITNESSES = Path(__file__).resolve().parent / "prove_witnesses.txt"
MAX_STEPS = 3
CAP_SECONDS = 60.0
BUDGET_SECONDS = 50.0


@dataclass(frozen=True)
class Witness:
    """One line of prove_witnesses.txt: a corpus file and its check witness."""

    path: str
    """Relative to the repository root."""
    requirement: str
    profile: str
    steps: int | None
    """Steps of the witness check showed for the header's id; None: check
    did not show it at quick (or it has no trace: a cost measurement)."""
    also: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProveRun:
    witness: Witness
    found: bool
    """A counterexample of the header's id (or an ``also=`` one)."""
    requirements: tuple[str, ...]
    """Every requirement the run's counterexamples broke."""
    wall_s: float
    exit_code: int | None
    """None: stopped at the cap."""


def _also(path: Path) -> tuple[str, ...]:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    words = (doc.splitlines() or [""])[0].split()
    found = [w.split("=", 1)[1] for w in words if w.startswith("also=")]
    return tuple(found[0].split(",")) if found else ()


def compute_witnesses(say: Callable[[str], object] = print) -> list[Witness]:
    """Check every corpus file at quick (module docstring) and return its
    witness length. Takes about an hour of one core now that a budget is
    work (the detection run that does the same took 3,570 s: results.txt),
    more with the quadratic cost faults."""
    files = [replace(f, runnable=True) for f in corpus()]
    found = []
    for faulty in files:
        curve = next(measure_detection(("quick",), jobs=1, files=[faulty]))
        catch = curve.catches[0]
        steps = catch.steps if catch.caught and catch.steps else None
        witness = Witness(str(faulty.path.relative_to(ROOT)), faulty.requirement,
                          faulty.profile, steps, _also(faulty.path))
        say(f"{witness.path}: {steps if steps is not None else '-'} steps")
        found.append(witness)
    return found


def write_witnesses(witnesses: list[Witness], path: Path = WITNESSES) -> None:
    load = os.getloadavg()[0]
    lines = [
        "# The check witness of every faulty corpus file, for benchmarks/prove_corpus.py.",
        "# Made by: python -m benchmarks.prove_corpus --witnesses (policyspec check at quick,",
        f"# --jobs 1, seed 0, header profile and capacity; load average {load:.1f} at the end).",
        "# path  requirement  profile  steps ('-': not shown at quick, or no trace)  also",
    ]
    for w in witnesses:
        steps = "-" if w.steps is None else str(w.steps)
        lines.append(f"{w.path}  {w.requirement}  {w.profile}  {steps}  {','.join(w.also) or '-'}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def read_witnesses(path: Path = WITNESSES) -> list[Witness]:
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, requirement, profile, steps, also = line.split()
        found.append(Witness(name, requirement, profile, None if steps == "-" else int(steps),
                             () if also == "-" else tuple(also.split(","))))
    return found


def short_witnesses(witnesses: list[Witness], most: int = MAX_STEPS) -> list[Witness]:
    """The files whose witness has from 1 to ``most`` steps."""
    return [w for w in witnesses if w.steps is not None and 1 <= w.steps <= most]


def measure_prove(
    witnesses: list[Witness], budget: float = BUDGET_SECONDS, cap: float = CAP_SECONDS,
) -> Iterator[ProveRun]:
    """``policyspec prove`` on each file (module docstring), one at a time."""
    registry = load_registry()
    for witness in witnesses:
        with tempfile.TemporaryDirectory() as folder:
            report = Path(folder) / "prove.json"
            command = [sys.executable, "-m", "policyspec", "prove", f"{witness.path}:Policy",
                       "--profile", witness.profile, "--budget", f"{budget:g}", "--fail-fast",
                       "-q", "--json-report", str(report)]
            if registry[witness.requirement].level != "MUST":
                command.append("--strict")  # as a user who wants SHOULD failures
            started = time.monotonic()
            child = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
            try:
                code: int | None = child.wait(timeout=cap)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, 9)  # the CLI and its CrossHair children
                child.wait()
                code = None
            wall = time.monotonic() - started
            broken: tuple[str, ...] = ()
            if code is not None and report.exists():
                data = json.loads(report.read_text(encoding="utf-8"))
                broken = tuple(f["requirement"] for f in data["failures"])
        wanted = {witness.requirement, *witness.also}
        yield ProveRun(witness, bool(wanted & set(broken)), broken, wall, code)


HEADER = (f"   {'file':<42}{'profile':<10}{'steps':>5}  {'found':<6}{'wall':>7}  "
          "counterexamples (requirements)")


def run_line(run: ProveRun, cap: float = CAP_SECONDS) -> str:
    """One file's row of the table."""
    w = run.witness
    wall = f"{run.wall_s:6.1f}s" if run.exit_code is not None else f">{cap:.0f}s"
    shown = ", ".join(run.requirements) or (
        "stopped at the cap" if run.exit_code is None else f"none (exit {run.exit_code})")
    return (f"   {Path(w.path).stem:<42}{w.profile:<10}{w.steps!s:>5}  "
            f"{'yes' if run.found else 'no':<6}{wall:>7}  {shown}")


def summary(runs: list[ProveRun], cap: float = CAP_SECONDS) -> str:
    found = [r for r in runs if r.found]
    slowest = f"{max(r.wall_s for r in found):.1f} s" if found else "-"
    return (f"   found {len(found)}/{len(runs)} within {cap:.0f} s wall each; "
            f"slowest found {slowest}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.prove_corpus", description=__doc__)
    parser.add_argument("--witnesses", action="store_true",
                        help=f"remake {WITNESSES.name} (about an hour of one core)")
    parser.add_argument("--only", action="append", metavar="NAME",
                        help="run only files whose name contains NAME (repeatable)")
    parser.add_argument("--budget", type=float, default=BUDGET_SECONDS)
    parser.add_argument("--cap", type=float, default=CAP_SECONDS)
    args = parser.parse_args(argv)
    if args.witnesses:
        write_witnesses(compute_witnesses(lambda line: print(line, flush=True)))
        return 0
    chosen = short_witnesses(read_witnesses())
    if args.only:
        chosen = [w for w in chosen if any(name in w.path for name in args.only)]
    print(f"load average {os.getloadavg()[0]:.1f} at the start\n{HEADER}", flush=True)
    runs = []
    for run in measure_prove(chosen, args.budget, args.cap):
        runs.append(run)
        print(run_line(run, args.cap), flush=True)
    print(summary(runs, args.cap))
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
