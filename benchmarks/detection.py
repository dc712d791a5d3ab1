"""The detection curve over the faulty corpus (tests/faulty/, hooks/ too).

Every faulty file is checked under its header's profile with every default
engine, as a user's ``policyspec check FILE:Policy --budget B`` would be
(``--jobs`` as given), at each budget: how many are caught under the id
their header names, how soon the run first saw it (``found_after_s``), how
long the minimal trace shown is, and how long the whole failing run took,
shrinking included. A file whose header names a capacity is checked at it
(``--capacity``, as its header tells a user); files that need a
non-default engine are counted apart.
"""

from __future__ import annotations

import ast
import importlib.util
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from policyspec.adapters import subject_for_class
from policyspec.engines import ENGINES
from policyspec.options import CheckOptions
from policyspec.profiles import get_profile
from policyspec.registry import load_registry
from policyspec.session import run_check

__all__ = ["Catch", "Curve", "FaultyFile", "corpus", "measure_detection"]

ROOT = Path(__file__).resolve().parent.parent
CORPUS = (ROOT / "tests" / "faulty", ROOT / "tests" / "faulty" / "hooks")


@dataclass(frozen=True)
class FaultyFile:
    path: Path
    requirement: str
    profile: str
    runnable: bool
    """False when the header asks for a non-default engine (tests run those
    files apart)."""
    capacity: int | None = None
    """The capacity the header asks for (``--capacity``), if any."""


def corpus() -> list[FaultyFile]:
    """The faulty files, from their headers (read without importing them).
    A requirement outside the header's profile (the cost ids) is checked
    under its own profile."""
    registry = load_registry()
    found = []
    for directory in CORPUS:
        for path in sorted(directory.glob("*.py")):
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
            kind, _, rest = (doc.splitlines() or [""])[0].partition(":")
            words = rest.split()
            if kind != "faulty" or not words:
                continue
            fields = dict(w.split("=", 1) for w in words[1:] if "=" in w)
            engines = fields.get("engine", "").split(",") if "engine" in fields else []
            runnable = all(e in ENGINES and ENGINES[e].default for e in engines)
            profile = fields.get("profile", "core")
            known = registry.get(words[0])
            if known is not None and known.profile not in get_profile(profile).includes:
                profile = known.profile
            capacity = int(fields["capacity"]) if "capacity" in fields else None
            found.append(FaultyFile(path, words[0], profile, runnable, capacity))
    return found


@dataclass(frozen=True)
class Catch:
    name: str
    caught: bool
    found_after_s: float | None
    wall_s: float
    steps: int | None
    """Steps of the minimal trace shown for the expected id."""
    engine: str | None = None
    """The engine that found the expected id ("size": a fault that shows
    only at production sizes, whose witness cannot be short)."""
    longest: tuple[str, int] = ("", 0)
    """The longest trace the report shows, of any id, and its id."""
    found_after_calls: int | None = None
    """Checked calls made before the first sighting: the same on any machine,
    unlike ``found_after_s``."""


@dataclass
class Curve:
    budget: float | str
    catches: list[Catch] = field(default_factory=list)

    @property
    def caught(self) -> list[Catch]:
        return [c for c in self.catches if c.caught]

    def found_after(self) -> tuple[float, float]:
        """Median and worst seconds to the first sighting, over the caught."""
        times = [c.found_after_s for c in self.caught if c.found_after_s is not None]
        return (statistics.median(times), max(times)) if times else (0.0, 0.0)

    def found_after_calls(self) -> tuple[float, int]:
        """Median and most checked calls before the first sighting."""
        calls = [c.found_after_calls for c in self.caught if c.found_after_calls is not None]
        return (statistics.median(calls), max(calls)) if calls else (0.0, 0)

    def trace_steps(self) -> tuple[float, int]:
        """Median and longest minimal trace, over the caught (a failure
        without a trace, e.g. a cost measurement, counts 0)."""
        steps = [c.steps or 0 for c in self.caught]
        return (statistics.median(steps), max(steps)) if steps else (0.0, 0)

    def trace_steps_unsized(self) -> tuple[float, int]:
        """``trace_steps`` without the size engine's findings."""
        steps = [c.steps or 0 for c in self.caught if c.engine != "size"]
        return (statistics.median(steps), max(steps)) if steps else (0.0, 0)

    def longest_any(self) -> Catch | None:
        """The caught file whose report shows the longest trace of any id,
        size findings apart."""
        unsized = [c for c in self.caught if c.engine != "size"]
        return max(unsized, key=lambda c: c.longest[1], default=None)

    def failing_wall(self) -> tuple[float, float]:
        """Median and worst wall seconds of the failing runs, shrinking included."""
        times = [c.wall_s for c in self.caught]
        return (statistics.median(times), max(times)) if times else (0.0, 0.0)


def _policy(path: Path) -> type:
    spec = importlib.util.spec_from_file_location(f"detection_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    policy: type = module.Policy
    return policy


def measure_detection(
    budgets: tuple[float | str, ...], jobs: int = 1, files: list[FaultyFile] | None = None
) -> Iterator[Curve]:
    """One curve per budget, over the runnable files of the corpus."""
    chosen = [f for f in (files if files is not None else corpus()) if f.runnable]
    for budget in budgets:
        curve = Curve(budget)
        for faulty in chosen:
            subject = subject_for_class(_policy(faulty.path))
            started = time.monotonic()
            options = CheckOptions(budget=budget, jobs=jobs, seed=0)
            if faulty.capacity is not None:
                options = replace(options, capacity=faulty.capacity, capacity_fixed=True)
            report = run_check(subject, get_profile(faulty.profile), options=options)
            wall = time.monotonic() - started
            hit = next((f for f in report.failures if f.requirement == faulty.requirement), None)
            longest = max(((f.requirement, len(f.trace)) for f in report.failures),
                          key=lambda pair: pair[1], default=("", 0))
            curve.catches.append(Catch(faulty.path.stem, hit is not None,
                                       hit.found_after_s if hit else None, wall,
                                       len(hit.trace) if hit else None,
                                       hit.engine if hit else None, longest,
                                       hit.found_after_calls if hit else None))
        yield curve
