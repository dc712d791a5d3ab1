"""``python -m benchmarks.mutation``: the suite's strength measured by mutation.

Every mutant cosmic-ray makes of a reference policy is judged by
``policyspec check`` of that policy's own profile at a small budget; a
mutant the check passes survived. Each survivor must be named in the
ledger (``mutation_missing_checks.toml``: a check the suite lacks;
``mutation_equivalent.toml``: equivalent under the caller contract): the
run exits 1 on a survivor the ledger does not name, or on a listed mutant
that was killed.

Mutants are made in a scratch copy of ``src/`` and ``spec/`` and run with
``PYTHONPATH`` pointing there; the worktree is never written (its reference
files are hashed before and after, and the run fails if they differ).
Needs the ``mutation`` extra (``pip install -e '.[mutation]'``).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import date
from importlib.metadata import version
from pathlib import Path
from typing import Any

from benchmarks.mutation_ledger import Ledger, MutantId, load_ledger

__all__ = ["TARGETS", "Mutant", "Outcome", "Target", "enumerate_mutants",
           "ledger_problems", "main", "mutants_of", "run_target"]

ROOT = Path(__file__).resolve().parent.parent
COPIED = ("src", "spec")
"""What a scratch tree needs to import policyspec and find its registry."""


@dataclass(frozen=True)
class Target:
    """One reference policy and how ``policyspec check`` judges its mutants."""

    path: str
    """The file to mutate, relative to the repository root."""
    policy: str
    """The ``module:Class`` target of ``policyspec check``."""
    profile: str
    options: tuple[str, ...] = ()
    also: tuple[tuple[str, ...], ...] = ()
    """Further option sets: a mutant the first check passes is judged again
    with each (same budget); it survives only if every check passes."""


TARGETS: tuple[Target, ...] = (
    Target("src/policyspec/reference/lru.py", "policyspec.reference:LRUCachePolicy", "lru"),
    # Capacity 8 is where the Hypothesis and random engines see ARC adapt; no
    # evict can ask for n >= 257 there, so the size engine then runs alone at
    # the capacities it draws.
    Target("src/policyspec/reference/arc.py", "policyspec.reference:ARCCachePolicy", "arc",
           ("--capacity", "8"), (("--engine", "size"),)),
    Target("src/policyspec/reference/lru034.py", "policyspec.reference:LRU034CachePolicy",
           "lru-0.34"),
    Target("src/policyspec/reference/lru033.py", "policyspec.reference:LRU033CachePolicy",
           "lru-0.33"),
)
"""One line per reference module: vLLM 0.34's request-ranked LRU (lru034.py)
and what 0.33's adds to it (lru033.py, touch)."""


@dataclass
class Outcome:
    """What became of one mutant."""

    mutant: MutantId
    diff: str
    status: str
    """killed, survived, timeout, error (cosmic-ray could not run it) or
    annotation (the change is inside an annotation: not run)."""
    killed_by: tuple[str, ...] = ()
    """The requirement ids the check reported (or its error line)."""
    seconds: float = 0.0


@dataclass
class FileResult:
    target: Target
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0


# -- the scratch tree ---------------------------------------------------------------


@contextmanager
def scratch_tree() -> Iterator[Path]:
    """A throwaway copy of what ``policyspec check`` imports, removed on
    every exit path."""
    root = Path(tempfile.mkdtemp(prefix="policyspec-mutation-"))
    try:
        for name in COPIED:
            shutil.copytree(ROOT / name, root / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def fingerprint(paths: Sequence[Path]) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


def check_command(target: Target, scratch: Path, budget: str) -> str:
    """The command cosmic-ray runs per mutant: ``policyspec check`` on the
    scratch copy (``env`` puts it first on the path), on one core (the
    benchmark judges one mutant at a time), stopping at the first MUST
    failure (a killed mutant needs one). With ``target.also``, the checks
    run one after the other through ``sh -c`` and the first failure ends it."""
    commands = [shlex.join(["env", f"PYTHONPATH={scratch / 'src'}", sys.executable, "-m",
                            "policyspec", "check", target.policy, "--profile", target.profile,
                            "--budget", budget, "--seed", "0", "--jobs", "1", "--fail-fast",
                            "-q", *options])
                for options in (target.options, *target.also)]
    if len(commands) == 1:
        return commands[0]
    return shlex.join(["sh", "-c", " && ".join(commands)])


def imports_scratch(scratch: Path) -> bool:
    """Whether a child with the scratch ``PYTHONPATH`` imports the scratch copy
    (an installed policyspec would otherwise judge the unmutated code)."""
    env = {**os.environ, "PYTHONPATH": str(scratch / "src")}
    found = subprocess.run([sys.executable, "-c", "import policyspec; print(policyspec.__file__)"],
                           env=env, capture_output=True, text=True, check=True).stdout.strip()
    return Path(found).resolve().is_relative_to(scratch.resolve())


# -- annotation-only mutants ---------------------------------------------------------


class _StripAnnotations(ast.NodeTransformer):
    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.returns = None
        return self.generic_visit(node)

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.annotation = None
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        if node.value is None:
            return ast.Pass()
        return ast.Assign(targets=[node.target], value=node.value, lineno=node.lineno)


def _without_annotations(source: str) -> str:
    return ast.dump(_StripAnnotations().visit(ast.parse(source)))


def annotation_only(original: str, mutated: str) -> bool:
    """The mutant differs from the original only inside annotations, and the
    module postpones their evaluation (PEP 563), so no code runs differently.
    (Nothing in policyspec evaluates a policy's annotations.)"""
    if "from __future__ import annotations" not in original:
        return False
    return _without_annotations(original) == _without_annotations(mutated)


# -- running one file ----------------------------------------------------------------

_FAIL = re.compile(r"^\s*FAIL\s+(\S+)", re.MULTILINE)


def killed_by(output: str) -> tuple[str, ...]:
    ids = tuple(dict.fromkeys(_FAIL.findall(output)))
    if ids:
        return ids
    lines = [line for line in output.splitlines() if line.strip()]
    return (lines[-1][:100],) if lines else ()


def _changed_lines(diff: str) -> tuple[str, str]:
    body = [line for line in diff.splitlines()
            if line[:1] in "+-" and not line.startswith(("+++", "---")) and line[1:].strip()]
    before = " / ".join(line[1:].strip() for line in body if line.startswith("-"))
    after = " / ".join(line[1:].strip() for line in body if line.startswith("+"))
    return before, after


@dataclass(frozen=True)
class Mutant:
    """One cosmic-ray mutant of a file: its work item, its identity, its source."""

    item: Any
    """cosmic-ray's ``WorkItem``."""
    id: MutantId
    source: str
    diff: str


def enumerate_mutants(module: Path, path: str, db: Any) -> list[Mutant]:
    """Every mutant cosmic-ray's default operators make of ``module`` (shown
    as ``path``), recorded in the session ``db``, in a fixed order."""
    from cosmic_ray.commands.init import init
    from cosmic_ray.mutating import mutate_code
    from cosmic_ray.plugins import get_operator

    original = module.read_text(encoding="utf-8")
    init([module], db, {})
    found = []
    for item in sorted(db.work_items, key=lambda i: (i.mutations[0].operator_name,
                                                     i.mutations[0].occurrence)):
        spec = item.mutations[0]
        source = mutate_code(original, get_operator(spec.operator_name)(), spec.occurrence)
        diff = "\n".join(_unified(original, source or original, path))
        before, after = _changed_lines(diff)
        mutant_id = MutantId(Path(path).name, spec.definition_name or "",
                             spec.operator_name.removeprefix("core/"), before, after)
        found.append(Mutant(item, mutant_id, source or original, diff))
    return found


def mutants_of(target: Target) -> list[Mutant]:
    """The mutants of the worktree's file (read, never written), for
    reporting and proofs; the session db is thrown away."""
    from cosmic_ray.work_db import WorkDB, use_db

    with (tempfile.TemporaryDirectory(prefix="policyspec-mutation-db-") as scratch,
          use_db(str(Path(scratch) / "session.sqlite"), WorkDB.Mode.create) as db):
        return enumerate_mutants(ROOT / target.path, target.path, db)


def run_target(
    target: Target,
    *,
    budget: str,
    timeout: float,
    limit: int | None,
    say: Callable[[str], None],
) -> FileResult:
    """Every mutant of ``target``, judged in a scratch tree."""
    from cosmic_ray.mutating import mutate_and_test
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    result = FileResult(target)
    started = time.monotonic()
    with scratch_tree() as scratch:
        if not imports_scratch(scratch):
            raise SystemExit("a child process does not import the scratch copy of policyspec")
        module = scratch / target.path
        original = module.read_text(encoding="utf-8")
        command = check_command(target, scratch, budget)
        baseline = subprocess.run(shlex.split(command), capture_output=True, text=True, check=False)
        if baseline.returncode != 0:
            raise SystemExit(f"the unmutated {target.path} fails its own check:\n"
                             f"{baseline.stdout[-2000:]}")
        with use_db(str(scratch / "session.sqlite"), WorkDB.Mode.create) as db:
            mutants = enumerate_mutants(module, target.path, db)[:limit]
            for index, mutant in enumerate(mutants, 1):
                t0 = time.monotonic()
                ids: tuple[str, ...] = ()
                if annotation_only(original, mutant.source):
                    status, ids = "annotation", ()
                else:
                    work = mutate_and_test(mutant.item.mutations, command, timeout)
                    if work.worker_outcome != WorkerOutcome.NORMAL:
                        status, ids = "error", (str(work.worker_outcome),)
                    elif work.test_outcome == TestOutcome.SURVIVED:
                        status, ids = "survived", ()
                    elif work.output == "timeout":
                        status, ids = "timeout", ()
                    else:
                        status, ids = "killed", killed_by(work.output or "")
                    db.set_result(mutant.item.job_id, work)
                outcome = Outcome(mutant.id, mutant.diff, status, ids, time.monotonic() - t0)
                result.outcomes.append(outcome)
                say(f"   [{index}/{len(mutants)}] {status:<10} {mutant.id.short()}"
                    f"{'  ' + ','.join(ids) if ids else ''}  ({outcome.seconds:.0f} s)")
        if module.read_text(encoding="utf-8") != original:
            raise SystemExit(f"cosmic-ray left a mutant in the scratch copy of {target.path}")
    result.seconds = time.monotonic() - started
    return result


def _unified(original: str, mutated: str, path: str) -> Iterator[str]:
    import difflib

    yield from difflib.unified_diff(original.splitlines(), mutated.splitlines(),
                                    fromfile=f"a/{path}", tofile=f"b/{path}", lineterm="")


# -- the report ----------------------------------------------------------------------


def report(result: FileResult, ledger: Ledger, budget: str, say: Callable[[str], None]) -> None:
    target = result.target
    counts = Counter(o.status for o in result.outcomes)
    run = len(result.outcomes) - counts["annotation"]
    also = "".join(f", then (if it passes) {' '.join(o)}" for o in target.also)
    say(f"{target.path}: policyspec check --profile {target.profile} --budget {budget} "
        f"{' '.join(target.options)}".rstrip() + also)
    say(f"   mutants {len(result.outcomes)}: not run (annotation only) {counts['annotation']}, "
        f"run {run}: killed {counts['killed']}, survived {counts['survived']}, "
        f"timed out {counts['timeout']}, errors {counts['error']}   ({result.seconds:.0f} s)")
    by_id = Counter(rid for o in result.outcomes if o.status == "killed" for rid in o.killed_by)
    say("   killed by: " + ", ".join(f"{rid} {n}" for rid, n in by_id.most_common()))
    survivors = [o for o in result.outcomes if o.status in ("survived", "timeout")]
    verdicts = [ledger.classify(o.mutant) for o in survivors]
    classes = Counter(v.kind for v in verdicts)
    proved = sum(1 for v in verdicts if v.proved)
    say(f"   survivors: {classes['missing-check']} need a missing check, "
        f"{classes['equivalent']} equivalent ({proved} of them proved by CrossHair), "
        f"{classes['unclassified']} unclassified")
    for outcome, verdict in zip(survivors, verdicts, strict=True):
        kind, note = verdict.kind, verdict.note
        say(f"   - [{kind}] {outcome.mutant.short()}" + (f" ({outcome.status})"
                                                        if outcome.status != "survived" else ""))
        if note:
            say(f"       {note}")
        for line in outcome.diff.splitlines():
            if line[:1] in "+-@" and not line.startswith(("+++", "---")):
                say(f"       {line}")
    say("")


def save(path: str, heading: list[str], budget: str, results: list[FileResult]) -> None:
    """The run's outcomes as JSON, so ``--render`` can classify them again
    after the ledger changes, without running the mutants again."""
    files = [{
        "path": r.target.path,
        "sha256": hashlib.sha256((ROOT / r.target.path).read_bytes()).hexdigest(),
        "seconds": r.seconds,
        "outcomes": [{"id": asdict(o.mutant), "status": o.status,
                      "killed_by": list(o.killed_by), "seconds": o.seconds}
                     for o in r.outcomes],
    } for r in results]
    Path(path).write_text(json.dumps({"heading": heading, "budget": budget, "files": files},
                                     indent=1) + "\n", encoding="utf-8")


def load(path: str) -> tuple[list[str], str, list[FileResult]]:
    """A saved run; survivors' diffs are made again from the current file
    when it is the one the run mutated (same hash)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    by_path = {t.path: t for t in TARGETS}
    results = []
    for saved in data["files"]:
        target = by_path[saved["path"]]
        diffs: dict[MutantId, str] = {}
        if hashlib.sha256((ROOT / target.path).read_bytes()).hexdigest() == saved["sha256"]:
            diffs = {m.id: m.diff for m in mutants_of(target)}
        outcomes = [Outcome(MutantId(**o["id"]), diffs.get(MutantId(**o["id"]), ""), o["status"],
                            tuple(o["killed_by"]), o["seconds"]) for o in saved["outcomes"]]
        results.append(FileResult(target, outcomes, saved["seconds"]))
    return data["heading"], data["budget"], results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mutation", description=__doc__)
    parser.add_argument("--budget", default="4", help="policyspec check --budget per mutant")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds before a mutant's check is killed (counted as timed out)")
    parser.add_argument("--only", action="append", help="only the targets whose file name "
                        "contains this (repeatable)")
    parser.add_argument("--limit", type=int, help="only the first N mutants per file (a smoke run)")
    parser.add_argument("--out", help="also write the report to this file")
    parser.add_argument("--json", help="also save the outcomes to this file (for --render)")
    parser.add_argument("--render", metavar="JSON", help="run nothing: report a saved run, "
                        "classified with the current ledger")
    args = parser.parse_args(argv)
    lines: list[str] = []

    def say(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    def progress(line: str) -> None:
        print(line, flush=True)

    ledger = load_ledger()
    if args.render:
        heading, budget, results = load(args.render)
        for line in heading:
            say(line)
        say(f"(report rendered from {args.render} with the ledger at commit {_commit()})\n")
    else:
        budget = args.budget
        targets = [t for t in TARGETS if not args.only or any(o in t.path for o in args.only)]
        watched = [ROOT / t.path for t in targets]
        before = fingerprint(watched)
        heading = [f"policyspec mutation benchmark, {date.today()}, commit {_commit()}, "
                   f"cosmic-ray {version('cosmic-ray')}, Python {platform.python_version()}, "
                   f"{os.cpu_count()} CPUs, load average {_load()} at the start"]
        say(heading[0])
        started = time.monotonic()
        results = [run_target(t, budget=budget, timeout=args.timeout, limit=args.limit,
                              say=progress) for t in targets]
        heading.append(f"(wall time {time.monotonic() - started:.0f} s; load average {_load()} "
                       "at the end)")
        say(heading[1] + "\n")
        if fingerprint(watched) != before:
            raise SystemExit("a reference file of the worktree changed during the run")
        if args.json:
            save(args.json, heading, budget, results)
    for result in results:
        report(result, ledger, budget, say)
    problems = ledger_problems(results, ledger)
    for problem in problems:
        say(f"LEDGER: {problem}")
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 1 if problems else 0


def ledger_problems(results: list[FileResult], ledger: Ledger) -> list[str]:
    """Why the run disagrees with the ledger: a survivor it does not list,
    or a listed mutant that was killed (a missing check that now exists, or
    an 'equivalent' mutant that is not)."""
    problems = []
    for result in results:
        for outcome in result.outcomes:
            survived = outcome.status in ("survived", "timeout")
            kind = ledger.classify(outcome.mutant).kind
            if survived and kind == "unclassified":
                problems.append(f"unclassified survivor {outcome.mutant.short()}")
            elif outcome.status == "killed" and kind != "unclassified":
                problems.append(f"listed as {kind} but killed by {','.join(outcome.killed_by)}: "
                                f"{outcome.mutant.short()} (delete or correct the entry)")
    return problems


def _commit() -> str:
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() or "?"


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"


if __name__ == "__main__":
    sys.exit(main())
