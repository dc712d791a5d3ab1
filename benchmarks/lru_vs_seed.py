"""The reference LRU against the seed-design baseline on a realistic workload.

The workload's log (benchmarks/workload.py) is replayed on fresh instances
of each policy, alternately, several times; the figure is the median CPU
time of each and their ratio baseline / reference (1.0 or more: the
reference is at least as fast). Both are exact seed LRUs, so both receive
the same calls.

One process is not enough: the two designs are alike, and a process's hash
seed and memory layout favour one or the other by up to a fifth, steadily
within the process (seen here: 0.79 to 1.17 between processes). So
``compare_in_processes`` runs ``compare`` in several fresh processes
(``python -m benchmarks.lru_vs_seed``) and reports each one's ratio and
their median.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

from benchmarks.replay import prepare, replay
from benchmarks.seed_design_lru import SeedDesignLRU
from benchmarks.workload import Workload, make_log
from policyspec.reference import LRUCachePolicy

__all__ = ["Comparison", "compare"]


@dataclass
class Comparison:
    calls: int
    steps: int
    reference: list[float] = field(default_factory=list)
    baseline: list[float] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return statistics.median(self.baseline) / statistics.median(self.reference)


def compare_in_processes(
    processes: int, repeats: int, workload: Workload | None = None
) -> list[Comparison]:
    """``compare`` in ``processes`` fresh interpreters, one after another."""
    chosen = workload or Workload()
    results = []
    for _ in range(processes):
        command = [sys.executable, "-m", "benchmarks.lru_vs_seed", "--repeats", str(repeats),
                   "--workload", json.dumps(asdict(chosen))]
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        results.append(Comparison(**json.loads(out)))
    return results


def compare(repeats: int, workload: Workload | None = None) -> Comparison:
    log = make_log(workload or Workload())
    _, calls = prepare(log, LRUCachePolicy)
    result = Comparison(calls=calls, steps=len(log) - 1)
    for index in range(repeats):
        # Each goes first every other time: the second replay of a pair
        # runs on memory the first has just freed.
        if index % 2:
            result.baseline.append(replay(prepare(log, SeedDesignLRU)[0]))
            result.reference.append(replay(prepare(log, LRUCachePolicy)[0]))
        else:
            result.reference.append(replay(prepare(log, LRUCachePolicy)[0]))
            result.baseline.append(replay(prepare(log, SeedDesignLRU)[0]))
    return result


def main(argv: list[str] | None = None) -> int:
    """One process's ``compare``, printed as JSON (for compare_in_processes)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.lru_vs_seed")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--workload", default="{}", help="Workload fields, as JSON")
    args = parser.parse_args(argv)
    # JSON has no tuples: the (low, high) ranges come back as lists.
    fields: dict[str, Any] = {name: tuple(value) if isinstance(value, list) else value
                              for name, value in json.loads(args.workload).items()}
    print(json.dumps(asdict(compare(args.repeats, Workload(**fields)))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
