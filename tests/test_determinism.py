"""Budgets are amounts of work: the same target, seed and budget
give the same checked calls per engine, the same verdict and the same
minimal traces with ``--jobs 1`` and ``--jobs 2``, and on a machine busy
with three CPU-bound processes. Nothing here is timed: a busy machine makes
the runs longer, and the test says they did the same work.

The budget is a third of quick (5 units): every engine still runs, and the
faulty policy is one it finds late (vLLM 0.33.0's ARC learning from a ghost
hit in insert: the stateful engine, seconds into the run), so the finding,
its minimisation and the blame all run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from policyspec.options import CheckOptions
from policyspec.profiles import get_profile
from policyspec.reports.report import Report
from policyspec.session import check_target

HERE = Path(__file__).parent
CASES = [
    ("policyspec.reference:LRUCachePolicy", "lru", None),
    # nightly (75 s in CI's slow tier): the same rule as the LRU's, with a
    # fixed capacity and a failure to shrink; CI keeps the LRU's
    pytest.param(f"{HERE / 'faulty' / 'hooks' / 'arc033_adapts_in_insert.py'}:Policy", "arc", 16,
                 marks=pytest.mark.nightly),
]


def fingerprint(report: Report) -> tuple[Any, ...]:
    """What must not depend on the machine: the verdict, each engine's
    work, and every failure's minimal trace."""
    engines = {name: (s["calls"], s["steps"], s["examples"])
               for name, s in sorted(report.stats["engines"].items())}
    return (report.verdict, report.errors, engines, report.stats["calls"],
            [(f.requirement, f.trace) for f in report.failures])


@contextmanager
def busy(processes: int = 3) -> Iterator[None]:
    """``processes`` CPU-bound processes beside the block."""
    spinning = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(processes)]
    try:
        yield
    finally:
        for process in spinning:
            process.kill()
            process.wait()


@pytest.mark.slow
@pytest.mark.parametrize(("target", "profile", "capacity"), CASES,
                         ids=["reference-lru", "arc033_adapts_in_insert"])
def test_the_same_budget_does_the_same_work_at_any_load_and_any_jobs(
        target: str, profile: str, capacity: int | None) -> None:
    options = CheckOptions(budget=5, seed=5, jobs=2)
    if capacity is not None:
        options = replace(options, capacity=capacity, capacity_fixed=True)
    chosen = get_profile(profile)
    base = fingerprint(check_target(target, chosen, options))
    alone = fingerprint(check_target(target, chosen, replace(options, jobs=1)))
    with busy():
        loaded = fingerprint(check_target(target, chosen, options))
    assert alone == base, "--jobs 1 did other work than --jobs 2"
    assert loaded == base, "a busy machine changed the work or the result"
    assert base[0] == ("pass" if "reference" in target else "fail")


CUT_AT_1000 = HERE / "faulty" / "size_protected_cut_at_1000.py"
"""A policy that honours the first 1,000 keys of ``protected`` in the set's
own order, which is hash order: what it evicts depends on the hash seed."""


def _command_report(tmp_path: Path, hash_seed: str) -> dict[str, Any]:
    """``policyspec check`` started as a user starts it, under a hash seed
    of its environment's choosing."""
    path = tmp_path / f"report-{hash_seed}.json"
    done = subprocess.run(
        [sys.executable, "-m", "policyspec", "check", f"{CUT_AT_1000}:Policy", "--engine", "size",
         "--budget", "1", "--seed", "7", "--jobs", "1", "-q", "--json-report", str(path)],
        env={**os.environ, "PYTHONHASHSEED": hash_seed}, capture_output=True, text=True,
        timeout=300, check=False,
    )
    assert done.returncode == 1, done.stderr[-2000:]
    document: dict[str, Any] = json.loads(path.read_text())
    return document


def test_the_command_does_the_same_work_under_any_hash_seed(tmp_path: Path) -> None:
    """The keys are bytes, hashed with a per-process secret unless
    PYTHONHASHSEED fixes it; the command runs under one seed
    (policyspec.hash_order), so the finding, its trace and the counts are
    the same whatever seed the user's shell has."""
    first, second = (_command_report(tmp_path, seed) for seed in ("1", "2"))
    for document in (first, second):
        for failure in document["failures"]:
            failure.pop("found_after_s", None)  # wall time
    assert first["failures"] and first["failures"] == second["failures"]
    assert first["stats"]["calls"] == second["stats"]["calls"]


STATEFUL_WORK = """
import json, sys
if sys.argv[1] == "after-the-cli":
    from policyspec.cli import build_parser
    build_parser()  # imports every command module, as `policyspec check` does
from policyspec.options import CheckOptions
from policyspec.session import check_target
report = check_target("policyspec.reference:LRUCachePolicy", "lru",
                      CheckOptions(budget=4.0, seed=7, engines=("stateful",)))
print(json.dumps(report.stats["engines"]["stateful"]))
"""


def test_the_stateful_engine_does_the_same_work_whatever_the_process_imported() -> None:
    """Hypothesis mixes constants read from every local module loaded into
    its draws; the command imports more of policyspec than a library call
    or a pytest session, and with those constants the same seed did other
    work in each (a nightly run once found other findings from the two front
    ends). The engines draw from the seed alone (``engines.draws``)."""
    def work(mode: str) -> tuple[int, int, int]:
        done = subprocess.run([sys.executable, "-c", STATEFUL_WORK, mode],
                              env={**os.environ, "PYTHONHASHSEED": "0"}, capture_output=True,
                              text=True, timeout=300, check=True)
        stats = json.loads(done.stdout.splitlines()[-1])
        return stats["calls"], stats["steps"], stats["examples"]

    assert work("plain") == work("after-the-cli")


def test_a_process_restarts_under_the_fixed_seed_only_when_it_is_not_already() -> None:
    probe = ("import sys; from policyspec.hash_order import run_under_fixed_hash; "
             "print(sys.flags.hash_randomization); run_under_fixed_hash(['--version'])")
    for seed, lines in (("1", ["1", "policyspec"]), ("0", ["0"])):
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}, timeout=60,
                              check=True)
        shown = [line.split()[0] for line in done.stdout.splitlines()]
        assert shown == lines, (seed, done.stdout)


def test_the_plugin_says_when_its_hash_seed_is_not_the_commands(tmp_path: Path) -> None:
    def header(seed: str) -> str:
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only",
             "--policy", "policyspec.reference:LRUCachePolicy"],
            cwd=tmp_path, env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True,
            text=True, timeout=120, check=False,
        ).stdout

    assert "PYTHONHASHSEED=0" in header("3")
    assert "PYTHONHASHSEED=0" not in header("0")
