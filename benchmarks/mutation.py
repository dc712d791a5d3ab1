"""``python -m benchmarks.mutation``: the suite's strength measured by mutation.

Every mutant cosmic-ray makes of a policy is judged by ``policyspec check``
of that policy's profile at a small budget; a mutant the check passes
survived. The policies are the repository's reference policies, and four
whose faults nobody in policyspec wrote: vLLM 0.34.0's in-tree LRU and ARC
as shipped (read from the release's wheel when the run starts, never kept
in the repository: ``benchmarks/mutation_wheel.py``), and a FIFO and a
CLOCK written for vLLM 0.34 as a newcomer would (``benchmarks/authored/``).

A killed mutant is judged three more ways, since a kill is only useful to
an author when it is right: the check's verdict must be FAIL (an ERROR is
a defect of policyspec); the requirement the report names must be the one
a replay of its witness breaks on the mutant (``mutation_judge.py``,
"blame right"), or, for the operation an exact profile's diagnosis names
behind a wrong order, an operation whose method runs the mutated code
(``mutation_located.py``); and the failure's snippet must fail in a fresh
process on the mutant and pass on the original ("snippet shown to fail").

Each survivor must be named in the ledger (``mutation_missing_checks.toml``:
a check the suite lacks; ``mutation_equivalent.toml``: equivalent under the
caller contract): the run exits 1 on a survivor the ledger does not name,
or on a listed mutant that was killed.

Mutants are written into a scratch copy of ``src/``, ``spec/`` and the
policy files and judged with ``PYTHONPATH`` pointing there; the worktree is
never written (its policy files are hashed before and after, and the run
fails if they differ). Needs the ``mutation`` extra
(``pip install -e '.[mutation]'``).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field
from datetime import date
from importlib.metadata import version
from pathlib import Path
from typing import Any

from benchmarks.mutation_ledger import Ledger, MutantId, load_ledger
from benchmarks.mutation_located import located
from benchmarks.mutation_wheel import VERSION, WheelUnavailable, policy_source, wheel

__all__ = ["TARGETS", "Blame", "Mutant", "Outcome", "Snippet", "Target", "check_commands",
           "enumerate_mutants", "ledger_problems", "main", "mutants_of", "run_target"]

ROOT = Path(__file__).resolve().parent.parent
COPIED = ("src", "spec")
"""What a scratch tree needs to import policyspec and find its registry."""
JUDGE = Path(__file__).resolve().parent / "mutation_judge.py"


@dataclass(frozen=True)
class Target:
    """One policy file and how ``policyspec check`` judges its mutants."""

    path: str
    """The file to mutate: relative to the repository root, or (``wheel``)
    where the scratch tree holds the file read from vLLM's wheel."""
    policy: str
    """The ``module:Class`` target of ``policyspec check``, or ``{file}:Class``
    for a lone file (``{file}``: its scratch copy's absolute path)."""
    profile: str
    options: tuple[str, ...] = ()
    also: tuple[tuple[str, ...], ...] = ()
    """Further option sets: a mutant the first check passes is judged again
    with each (same budget); it survives only if every check passes."""
    wheel: str = ""
    """The file's name under ``vllm/v1/kv_offload/cpu/policies/`` in vLLM
    ``VERSION``'s wheel; empty for a file of the repository."""
    note: str = ""
    """A caveat the report prints under the target's heading."""

    @property
    def file_id(self) -> str:
        """The file as the ledger names it: a repository file by its name,
        a file of vLLM's wheel by its scratch path (``vllm-0.34.0/lru.py``,
        distinct from the reference ``lru.py``)."""
        return self.path if self.wheel else Path(self.path).name

    def policy_in(self, scratch: Path) -> str:
        return self.policy.format(file=scratch / self.path)


WHEEL_DIR = f"vllm-{VERSION}"
EXIT_UNJUDGED = 3
"""``policyspec check``'s exit when no MUST failed but some stayed unjudged."""

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
    # vLLM 0.34.0's own policies, as its wheel ships them: the LRU under its
    # exact profile, then core alone; the ARC as the reference ARC is judged.
    # Each new target ends with the size engine alone: with the whole budget
    # it reaches evict(n) for n >= 257, where a count compared with `is` fails.
    Target(f"{WHEEL_DIR}/lru.py", "{file}:LRUCachePolicy", "lru-0.34",
           also=(("--profile", "core"), ("--engine", "size")), wheel="lru.py"),
    Target(f"{WHEEL_DIR}/arc.py", "{file}:ARCCachePolicy", "arc-0.34",
           ("--capacity", "8"), (("--engine", "size"),), wheel="arc.py"),
    # Policies written for vLLM 0.34 (R10) as a newcomer would.
    Target("benchmarks/authored/fifo034.py", "{file}:FIFOCachePolicy", "fifo",
           also=(("--engine", "size"),)),
    Target("benchmarks/authored/clock034.py", "{file}:ClockCachePolicy", "core",
           also=(("--engine", "size"),),
           note="no profile states CLOCK's exact victims: core judges it, so a mutant "
                "that only evicts other idle keys survives (a missing check)"),
)
"""One line per policy file: the reference policies (vLLM 0.34's
request-ranked LRU, lru034.py, and what 0.33's adds to it, lru033.py), vLLM
0.34.0's shipped LRU and ARC, and the authored FIFO and CLOCK."""


@dataclass(frozen=True)
class Blame:
    """A failure of a killing report, its witness replayed on the mutant."""

    requirement: str
    replayed: str | None = None
    """The failure of the replay stopped only by the named requirement's
    family (None: none, or not replayed)."""
    right: bool | None = None
    """Whether the named check failed on the witness; None: not replayable."""
    note: str = ""
    first: str | None = None
    """The first requirement any MUST check of the replay broke."""
    diagnosed: bool = False
    """The named check does not fail, the witness breaks the exact profile's
    order: the report named the operation behind it by probing prefixes."""


@dataclass(frozen=True)
class Snippet:
    """The killing failure's ``repro``, each run in a fresh process."""

    requirement: str
    on_mutant: str
    """fails, passes or timeout (``none``: the failure has no snippet)."""
    on_original: str
    error: str = ""
    """The last line the snippet wrote on the mutant (its exception)."""

    @property
    def shown(self) -> bool:
        """It tells the mutant from the original: fails on it, passes without it."""
        return self.on_mutant == "fails" and self.on_original == "passes"

    @property
    def asserts(self) -> bool:
        """It fails on the mutant by asserting the named requirement."""
        return self.on_mutant == "fails" and self.error.startswith(
            f"AssertionError: {self.requirement}")


@dataclass
class Outcome:
    """What became of one mutant."""

    mutant: MutantId
    diff: str
    status: str
    """killed, survived, timeout, error (the mutant could not be made) or
    annotation (the change is inside an annotation: not run)."""
    killed_by: tuple[str, ...] = ()
    """The MUST requirement ids the check reported (or its error line)."""
    seconds: float = 0.0
    verdict: str = ""
    """The killing check's verdict (``fail``; ``error``, ``unjudged``, ...
    or ``exit N`` without a report, all defects of policyspec); empty
    unless killed."""
    blame: tuple[Blame, ...] = ()
    snippet: Snippet | None = None

    @property
    def killed_with_error(self) -> bool:
        return self.status == "killed" and self.verdict != "fail"

    @property
    def unloadable(self) -> bool:
        """Killed by the check's refusal to load the mutant: its file raises
        when imported (a mutated annotation evaluated at definition time,
        without ``from __future__ import annotations``) or its class when
        built; exit 2 with one line, no verdict."""
        return (self.killed_with_error and self.verdict == "exit 2" and bool(self.killed_by)
                and _UNLOADABLE.search(self.killed_by[0]) is not None)

    @property
    def blame_by_diagnosis(self) -> bool:
        """Not blamed right, but each wrong blame names the operation behind
        an exact profile's wrong order (``Blame.diagnosed``)."""
        wrong = [b for b in self.blame if b.right is False]
        return bool(wrong) and all(b.diagnosed for b in wrong)

    @property
    def blame_right(self) -> bool | None:
        """Every replayable failure of the killing report blames the
        requirement its witness breaks; None when none was replayable."""
        judged = [b.right for b in self.blame if b.right is not None]
        return all(judged) if judged else None


@dataclass
class FileResult:
    target: Target
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0
    sha256: str = ""
    """Of the unmutated file the run read."""
    source: str = ""
    """The unmutated file's text (where a diagnosis is located)."""

    def located(self, outcome: Outcome) -> bool:
        """Each wrong blame of ``outcome`` is a diagnosis naming an
        operation whose method runs the mutated code
        (``benchmarks.mutation_located``)."""
        wrong = [b for b in outcome.blame if b.right is False]
        return bool(wrong) and bool(self.source) and all(
            b.diagnosed and located(self.source, outcome.mutant.definition,
                                    self.target.profile, b.requirement)
            for b in wrong)


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
        shutil.copy2(JUDGE, root / JUDGE.name)  # run from here: only the scratch tree on its path
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def fingerprint(paths: Sequence[Path]) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


def original_source(target: Target, wheel_path: Path | None) -> str:
    """The unmutated text: the repository's file, or the wheel's."""
    if not target.wheel:
        return (ROOT / target.path).read_text(encoding="utf-8")
    if wheel_path is None:
        raise WheelUnavailable(f"{target.path} is read from vLLM {VERSION}'s wheel: none given")
    return policy_source(wheel_path, target.wheel)


def child_env(scratch: Path) -> dict[str, str]:
    """The scratch copy first on the path, and no bytecode written: a mutant
    rewritten within the same second as the original must not be served
    from a stale ``.pyc``."""
    return {**os.environ, "PYTHONPATH": str(scratch / "src"), "PYTHONDONTWRITEBYTECODE": "1"}


def check_commands(target: Target, scratch: Path, budget: str, report: Path
                   ) -> list[list[str]]:
    """The checks a mutant faces, in order, the first failure ending it:
    ``policyspec check`` on the scratch copy, on one core (the benchmark
    judges one mutant at a time), stopping at the first MUST failure (a
    killed mutant needs one), writing its JSON report to ``report``."""
    return [[sys.executable, "-m", "policyspec", "check", target.policy_in(scratch),
             "--profile", target.profile, "--budget", budget, "--seed", "0", "--jobs", "1",
             "--fail-fast", "-q", *options, "--json-report", str(report)]
            for options in (target.options, *target.also)]


def profile_of(command: Sequence[str]) -> str:
    """The profile a check command runs (its last ``--profile``)."""
    return [command[i + 1] for i, arg in enumerate(command[:-1]) if arg == "--profile"][-1]


def run_child(argv: Sequence[str], *, env: dict[str, str], cwd: Path, timeout: float
              ) -> tuple[int | None, str, str]:
    """(exit code, stdout, stderr); exit None when ``timeout`` passed and
    the child's whole process group was killed."""
    with subprocess.Popen(list(argv), env=env, cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, start_new_session=True) as child:
        try:
            out, err = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            out, err = child.communicate()
            return None, out, err
        return child.returncode, out, err


def imports_scratch(scratch: Path) -> bool:
    """Whether a child with the scratch ``PYTHONPATH`` imports the scratch copy
    (an installed policyspec would otherwise judge the unmutated code)."""
    found = subprocess.run([sys.executable, "-c", "import policyspec; print(policyspec.__file__)"],
                           env=child_env(scratch), capture_output=True, text=True,
                           check=True).stdout.strip()
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


# -- judging one mutant -------------------------------------------------------------

_FAIL = re.compile(r"^\s*FAIL\s+(\S+)", re.MULTILINE)
_UNLOADABLE = re.compile(r"importing the policy file raised|building \S+ raised")


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


def enumerate_mutants(module: Path, target: Target, db: Any) -> list[Mutant]:
    """Every mutant cosmic-ray's default operators make of ``module`` (the
    file of ``target``), recorded in the session ``db``, in a fixed order."""
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
        diff = "\n".join(_unified(original, source or original, target.path))
        before, after = _changed_lines(diff)
        mutant_id = MutantId(target.file_id, spec.definition_name or "",
                             spec.operator_name.removeprefix("core/"), before, after)
        found.append(Mutant(item, mutant_id, source or original, diff))
    return found


def mutants_of(target: Target, wheel_path: Path | None = None) -> list[Mutant]:
    """The mutants of the target's unmutated file (the worktree's is read,
    never written), for reporting, proofs and the ledger's test; the
    session db is thrown away."""
    from cosmic_ray.work_db import WorkDB, use_db

    with (tempfile.TemporaryDirectory(prefix="policyspec-mutation-db-") as scratch,
          use_db(str(Path(scratch) / "session.sqlite"), WorkDB.Mode.create) as db):
        module = Path(scratch) / Path(target.path).name
        module.write_text(original_source(target, wheel_path), encoding="utf-8")
        return enumerate_mutants(module, target, db)


def _report_of(path: Path) -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data


def _killing(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The failures that made the verdict: the MUSTs (all, if none is)."""
    failures: list[dict[str, Any]] = report.get("failures", [])
    musts = [f for f in failures if f.get("level") == "MUST"]
    return musts or failures


def _passes(code: int, report: dict[str, Any] | None, *, further: bool) -> bool:
    """Whether a check passed the mutant. A further option set runs some
    engines only (``--engine size``), which leaves MUSTs unjudged by design:
    there only a failure counts."""
    if code == 0:
        return True
    return (further and code == EXIT_UNJUDGED and report is not None
            and not report.get("failures"))


def _blame(scratch: Path, report: Path, command: Sequence[str], policy: str, timeout: float
           ) -> tuple[Blame, ...]:
    """Each failure of ``report`` replayed on the mutant in place (module doc)."""
    code, out, err = run_child(
        [sys.executable, str(scratch / JUDGE.name), str(report), policy, profile_of(command), "0"],
        env=child_env(scratch), cwd=scratch, timeout=timeout)
    if code != 0:
        why = "timed out" if code is None else (err.strip().splitlines() or [f"exit {code}"])[-1]
        return (Blame("?", note=f"the replay could not run: {why[:160]}"),)
    return tuple(Blame(b["requirement"], b["replayed"], b["right"], b["note"], b.get("first"),
                       bool(b.get("diagnosed")))
                 for b in json.loads(out)["failures"])


def _snippet(scratch: Path, repro: str, timeout: float) -> tuple[str, str]:
    """(fails | passes | timeout, the last line it wrote) for ``repro`` run
    in a fresh process against what the scratch tree holds now."""
    code, _, err = run_child([sys.executable, "-c", repro], env=child_env(scratch),
                             cwd=scratch, timeout=timeout)
    last = (err.strip().splitlines() or [""])[-1][:200]
    if code is None:
        return "timeout", last
    return ("passes" if code == 0 else "fails"), last


def judge_mutant(target: Target, scratch: Path, module: Path, original: str, mutant: Mutant,
                 *, budget: str, timeout: float, snippets: bool) -> Outcome:
    """Write the mutant into the scratch copy, judge it (module doc), put the
    original back (on every exit path)."""
    started = time.monotonic()
    report_path = scratch / "mutant-report.json"
    policy = target.policy_in(scratch)
    env = child_env(scratch)
    outcome = Outcome(mutant.id, mutant.diff, "survived")
    killer: dict[str, Any] | None = None
    module.write_text(mutant.source, encoding="utf-8")
    try:
        for index, command in enumerate(check_commands(target, scratch, budget, report_path)):
            report_path.unlink(missing_ok=True)
            code, out, err = run_child(command, env=env, cwd=scratch, timeout=timeout)
            if code is None:
                outcome.status = "timeout"
                break
            report = _report_of(report_path)
            if _passes(code, report, further=index > 0):
                continue
            outcome.status = "killed"
            if report is None:  # no report: policyspec stopped before judging
                outcome.verdict = f"exit {code}"
                outcome.killed_by = killed_by(out + err)
                break
            outcome.verdict = str(report.get("verdict"))
            failures = _killing(report)
            outcome.killed_by = (tuple(str(f["requirement"]) for f in failures)
                                 or killed_by(out + "\n".join(report.get("errors", []))))
            if failures:
                outcome.blame = _blame(scratch, report_path, command, policy, timeout)
                killer = failures[0]
                if snippets and killer.get("repro"):
                    on_mutant, error = _snippet(scratch, str(killer["repro"]), timeout)
                    outcome.snippet = Snippet(str(killer["requirement"]), on_mutant, "", error)
            break
    finally:
        module.write_text(original, encoding="utf-8")
    if outcome.snippet is not None and killer is not None:
        on_original, _ = _snippet(scratch, str(killer["repro"]), timeout)
        outcome.snippet = Snippet(outcome.snippet.requirement, outcome.snippet.on_mutant,
                                  on_original, outcome.snippet.error)
    elif snippets and killer is not None:
        outcome.snippet = Snippet(str(killer["requirement"]), "none", "none")
    outcome.seconds = time.monotonic() - started
    return outcome


def _prepare(target: Target, scratch: Path, wheel_path: Path | None) -> tuple[Path, str]:
    """The target's file in the scratch tree (copied from the worktree or
    extracted from the wheel) and its unmutated text."""
    module = scratch / target.path
    original = original_source(target, wheel_path)
    module.parent.mkdir(parents=True, exist_ok=True)
    module.write_text(original, encoding="utf-8")
    return module, original


def run_target(
    target: Target,
    *,
    budget: str,
    timeout: float,
    limit: int | None,
    say: Callable[[str], None],
    wheel_path: Path | None = None,
    select: Callable[[MutantId], bool] | None = None,
    snippets: bool = True,
) -> FileResult:
    """Every mutant of ``target`` (``select``: those it accepts; ``limit``:
    the first N of them), judged in a scratch tree."""
    from cosmic_ray.work_db import WorkDB, use_db

    result = FileResult(target)
    started = time.monotonic()
    with scratch_tree() as scratch:
        if not imports_scratch(scratch):
            raise SystemExit("a child process does not import the scratch copy of policyspec")
        module, original = _prepare(target, scratch, wheel_path)
        result.sha256 = hashlib.sha256(original.encode("utf-8")).hexdigest()
        result.source = original
        baseline = scratch / "baseline.json"
        for index, command in enumerate(check_commands(target, scratch, budget, baseline)):
            baseline.unlink(missing_ok=True)
            code, out, _ = run_child(command, env=child_env(scratch), cwd=scratch,
                                     timeout=timeout)
            if code is None or not _passes(code, _report_of(baseline), further=index > 0):
                raise SystemExit(f"the unmutated {target.path} fails its own check "
                                 f"({' '.join(command[4:-2])}):\n{out[-2000:]}")
        with use_db(str(scratch / "session.sqlite"), WorkDB.Mode.create) as db:
            mutants = [m for m in enumerate_mutants(module, target, db)
                       if select is None or select(m.id)][:limit]
            for index, mutant in enumerate(mutants, 1):
                if mutant.source == original:
                    outcome = Outcome(mutant.id, mutant.diff, "error",
                                      ("cosmic-ray made no change",))
                elif annotation_only(original, mutant.source):
                    outcome = Outcome(mutant.id, mutant.diff, "annotation")
                else:
                    outcome = judge_mutant(target, scratch, module, original, mutant,
                                           budget=budget, timeout=timeout, snippets=snippets)
                result.outcomes.append(outcome)
                say(f"   [{index}/{len(mutants)}] {_line(outcome)}  ({outcome.seconds:.0f} s)")
        if module.read_text(encoding="utf-8") != original:
            raise SystemExit(f"a mutant was left in the scratch copy of {target.path}")
    result.seconds = time.monotonic() - started
    return result


def _line(outcome: Outcome) -> str:
    """One line per mutant: status, identity, what killed it and how well."""
    text = f"{outcome.status:<10} {outcome.mutant.short()}"
    if outcome.killed_by:
        text += "  " + ",".join(outcome.killed_by)
    if outcome.status == "killed":
        blame = {True: "right", False: "WRONG", None: "not replayed"}[outcome.blame_right]
        if outcome.blame_by_diagnosis:
            blame = "by diagnosis"
        text += f"  [verdict {outcome.verdict}, blame {blame}"
        if outcome.snippet is not None:
            text += (f", snippet {outcome.snippet.on_mutant} on the mutant / "
                     f"{outcome.snippet.on_original} on the original")
        text += "]"
    return text


def _unified(original: str, mutated: str, path: str) -> Iterator[str]:
    import difflib

    yield from difflib.unified_diff(original.splitlines(), mutated.splitlines(),
                                    fromfile=f"a/{path}", tofile=f"b/{path}", lineterm="")


# -- the report ----------------------------------------------------------------------


def _share(part: int, whole: int) -> str:
    return f"{part} of {whole} ({100 * part / whole:.0f}%)" if whole else f"{part} of 0 (-)"


@dataclass(frozen=True)
class Tally:
    """The per-policy figures of the report and its closing table."""

    mutants: int
    killed: int
    killed_error: int
    """Killed with another verdict than FAIL."""
    errors: int
    """Of ``killed_error``: verdict ERROR (a policyspec defect)."""
    unloadable: int
    blame_judged: int
    blame_right: int
    """Confirmed on replay, or a diagnosis located at the mutated code."""
    blame_located: int
    """Of ``blame_right``: a diagnosis located at the mutated code."""
    blame_diagnosed: int
    """A diagnosis that names an operation not running the mutated code."""
    snippet_runs: int
    snippet_shown: int
    snippet_asserts: int
    survivors: int
    unclassified: int

    @classmethod
    def of(cls, result: FileResult, ledger: Ledger) -> Tally:
        killed = [o for o in result.outcomes if o.status == "killed"]
        judged = [o for o in killed if o.blame_right is not None]
        ran = [o.snippet for o in killed if o.snippet is not None]
        survivors = [o for o in result.outcomes if o.status in ("survived", "timeout")]
        return cls(
            mutants=len(result.outcomes), killed=len(killed),
            killed_error=sum(1 for o in killed if o.killed_with_error),
            errors=sum(1 for o in killed if o.verdict == "error"),
            unloadable=sum(1 for o in killed if o.unloadable),
            blame_judged=len(judged),
            blame_right=sum(1 for o in judged if o.blame_right or result.located(o)),
            blame_located=sum(1 for o in judged if result.located(o)),
            blame_diagnosed=sum(1 for o in judged
                                if o.blame_by_diagnosis and not result.located(o)),
            snippet_runs=len(ran), snippet_shown=sum(1 for s in ran if s.shown),
            snippet_asserts=sum(1 for s in ran if s.asserts),
            survivors=len(survivors),
            unclassified=sum(1 for o in survivors
                             if ledger.classify(o.mutant).kind == "unclassified"))


def report(result: FileResult, ledger: Ledger, budget: str, say: Callable[[str], None]) -> None:
    target = result.target
    counts = Counter(o.status for o in result.outcomes)
    tally = Tally.of(result, ledger)
    run = len(result.outcomes) - counts["annotation"] - counts["error"]
    also = "".join(f", then (if it passes) {' '.join(o)}" for o in target.also)
    say(f"{target.path}: policyspec check {target.policy.format(file=target.path)} --profile "
        f"{target.profile} --budget {budget} {' '.join(target.options)}".rstrip() + also)
    if target.note:
        say(f"   note: {target.note}")
    say(f"   mutants {len(result.outcomes)}: not run (annotation only) {counts['annotation']}, "
        f"not made {counts['error']}, run {run}: killed {counts['killed']}, "
        f"survived {counts['survived']}, timed out {counts['timeout']}   "
        f"({result.seconds:.0f} s)")
    say(f"   killed with verdict FAIL {tally.killed - tally.killed_error}, with another "
        f"verdict {tally.killed_error} (of them {tally.errors} ERROR, {tally.unloadable} "
        "refused with exit 2 as unloadable: the mutant raises when imported or built)")
    say(f"   blame right: {_share(tally.blame_right, tally.blame_judged)} killed with a "
        f"replayable witness: {tally.blame_right - tally.blame_located} the witness replayed on "
        f"the mutant breaks the named requirement, {tally.blame_located} name the operation "
        "behind a wrong order (found by probing) whose method runs the mutated code; of the "
        f"rest, {tally.blame_diagnosed} name an operation by probing that does not run it")
    say(f"   snippets shown to fail (fail on the mutant, pass on the original): "
        f"{_share(tally.snippet_shown, tally.snippet_runs)} run; failing by asserting the "
        f"named requirement: {tally.snippet_asserts}")
    by_id = Counter(rid for o in result.outcomes if o.status == "killed" for rid in o.killed_by)
    say("   killed by: " + ", ".join(f"{rid} {n}" for rid, n in by_id.most_common()))
    for outcome in result.outcomes:
        if outcome.killed_with_error and not outcome.unloadable:
            why = {"error": "policyspec defect",
                   "unjudged": "no MUST fails: only a SHOULD does"}.get(outcome.verdict, "")
            say(f"   - [verdict {outcome.verdict}{': ' + why if why else ''}] "
                f"{outcome.mutant.short()}  {','.join(outcome.killed_by)}")
        if (outcome.status == "killed" and outcome.blame_right is False
                and not result.located(outcome)):  # (located: the operation runs the code)
            wrong = "; ".join(f"{b.requirement}: {b.note}" for b in outcome.blame
                              if b.right is False)
            kind = ("blame by diagnosis, elsewhere" if outcome.blame_by_diagnosis
                    else "blame wrong")
            say(f"   - [{kind}] {outcome.mutant.short()}\n       {wrong}")
        snippet = outcome.snippet
        if snippet is not None and not snippet.shown:
            say(f"   - [snippet not shown to fail] {outcome.mutant.short()}: {snippet.requirement} "
                f"snippet {snippet.on_mutant} on the mutant, {snippet.on_original} on the "
                f"original" + (f" ({snippet.error})" if snippet.error else ""))
    survivors = [o for o in result.outcomes if o.status in ("survived", "timeout")]
    verdicts = [ledger.classify(o.mutant) for o in survivors]
    classes = Counter(v.kind for v in verdicts)
    proved = sum(1 for v in verdicts if v.proved)
    say(f"   survivors {len(survivors)}: classified {len(survivors) - classes['unclassified']} "
        f"({classes['missing-check']} need a missing check, {classes['equivalent']} equivalent, "
        f"{proved} of them proved by CrossHair), unclassified {classes['unclassified']}")
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


def summary(results: list[FileResult], ledger: Ledger, say: Callable[[str], None]) -> None:
    """One row per policy: the figures the brief of this benchmark asks for."""
    say("policy                               mutants  killed  not FAIL: ERROR (unloadable)  "
        "blame right  snippets shown to fail  survivors classified/unclassified")
    for result in results:
        t = Tally.of(result, ledger)
        blame = f"{100 * t.blame_right / t.blame_judged:.0f}%" if t.blame_judged else "-"
        shown = f"{100 * t.snippet_shown / t.snippet_runs:.0f}%" if t.snippet_runs else "-"
        error = f"{t.killed_error}: {t.errors} ({t.unloadable})"
        say(f"{result.target.path:<36} {t.mutants:>7}  {t.killed:>6}  {error:>28}  "
            f"{blame:>11}  {shown:>22}  {t.survivors - t.unclassified}/{t.unclassified}")
    say("")


def save(path: str, heading: list[str], budget: str, results: list[FileResult]) -> None:
    """The run's outcomes as JSON, so ``--render`` can classify them again
    after the ledger changes, without running the mutants again."""
    files = [{
        "path": r.target.path,
        "file": r.target.file_id,
        "sha256": r.sha256,
        "seconds": r.seconds,
        "outcomes": [{"id": asdict(o.mutant), "status": o.status,
                      "killed_by": list(o.killed_by), "seconds": o.seconds,
                      "verdict": o.verdict, "killed_with_error": o.killed_with_error,
                      "unloadable": o.unloadable,
                      "blame": [asdict(b) for b in o.blame], "blame_right": o.blame_right,
                      "snippet": None if o.snippet is None else {
                          **asdict(o.snippet), "shown": o.snippet.shown,
                          "asserts": o.snippet.asserts},
                      "diff": o.diff}
                     for o in r.outcomes],
    } for r in results]
    Path(path).write_text(json.dumps({"heading": heading, "budget": budget, "files": files},
                                     indent=1) + "\n", encoding="utf-8")


def load(path: str) -> tuple[list[str], str, list[FileResult]]:
    """A saved run. Runs saved without diffs get them made again from the
    worktree's file when it is the one the run mutated (same hash)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    by_path = {t.path: t for t in TARGETS}
    results = []
    for saved in data["files"]:
        target = by_path[saved["path"]]
        diffs: dict[MutantId, str] = {}
        if (not target.wheel and any("diff" not in o for o in saved["outcomes"])
                and hashlib.sha256((ROOT / target.path).read_bytes()).hexdigest()
                == saved["sha256"]):
            diffs = {m.id: m.diff for m in mutants_of(target)}
        outcomes = []
        for o in saved["outcomes"]:
            mutant = MutantId(**o["id"])
            snippet = o.get("snippet")
            outcomes.append(Outcome(
                mutant, o.get("diff", diffs.get(mutant, "")), o["status"],
                tuple(o["killed_by"]), o["seconds"],
                # runs saved before verdicts were kept counted any exit as a kill
                o.get("verdict", "fail" if o["status"] == "killed" else ""),
                tuple(Blame(**b) for b in o.get("blame", [])),
                None if snippet is None else Snippet(
                    snippet["requirement"], snippet["on_mutant"], snippet["on_original"],
                    snippet.get("error", ""))))
        result = FileResult(target, outcomes, saved["seconds"], saved["sha256"])
        with suppress(WheelUnavailable):  # (then no diagnosis is located)
            result.source = original_source(target, wheel() if target.wheel else None)
        if hashlib.sha256(result.source.encode("utf-8")).hexdigest() != result.sha256:
            result.source = ""  # not the file the run mutated
        results.append(result)
    return data["heading"], data["budget"], results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mutation", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", default="4", help="policyspec check --budget per mutant "
                        "(a work budget: a name or units; default 4)")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds before a mutant's check (or its replay, or a snippet) "
                        "is killed (a check counted as timed out)")
    parser.add_argument("--only", action="append", help="only the targets whose path contains "
                        "this (repeatable; e.g. fifo034, vllm-0.34.0/, reference/lru.py)")
    parser.add_argument("--limit", type=int, help="only the first N mutants per file (a smoke run)")
    parser.add_argument("--wheel-dir", type=Path, help="where vLLM's wheel is kept or "
                        "downloaded to (default: ~/.cache/policyspec/vllm-wheels)")
    parser.add_argument("--no-snippets", action="store_true",
                        help="do not run the killing failures' snippets")
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

    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")
    ledger = load_ledger()
    if args.render:
        heading, budget, results = load(args.render)
        for line in heading:
            say(line)
        say(f"(report rendered from {args.render} with the ledger at commit {_commit()})\n")
    else:
        budget = args.budget
        targets = [t for t in TARGETS if not args.only or any(o in t.path for o in args.only)]
        if not targets:
            parser.error(f"--only {' '.join(args.only)} matches no target "
                         f"({', '.join(t.path for t in TARGETS)})")
        wheel_path = None
        if any(t.wheel for t in targets):
            try:
                wheel_path = wheel(args.wheel_dir)
            except WheelUnavailable as exc:
                print(f"python -m benchmarks.mutation: error: {exc}", file=sys.stderr)
                return 2
        watched = [ROOT / t.path for t in targets if not t.wheel]
        before = fingerprint(watched)
        heading = [f"policyspec mutation benchmark, {date.today()}, commit {_commit()}, "
                   f"cosmic-ray {version('cosmic-ray')}, Python {platform.python_version()}, "
                   f"{os.cpu_count()} CPUs, load average {_load()} at the start"
                   + (f"; vLLM files from {wheel_path.name}" if wheel_path else "")]
        say(heading[0])
        started = time.monotonic()
        results = []
        for target in targets:
            progress(f"{target.path} ({target.profile})")
            results.append(run_target(target, budget=budget, timeout=args.timeout,
                                      limit=args.limit, say=progress, wheel_path=wheel_path,
                                      snippets=not args.no_snippets))
        heading.append(f"(wall time {time.monotonic() - started:.0f} s; load average {_load()} "
                       "at the end" + (f"; at most {args.limit} mutants per file"
                                       if args.limit else "") + ")")
        say(heading[1] + "\n")
        if fingerprint(watched) != before:
            raise SystemExit("a policy file of the worktree changed during the run")
        if args.json:
            save(args.json, heading, budget, results)
    for result in results:
        report(result, ledger, budget, say)
    summary(results, ledger, say)
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
        # Two mutants can share an identity (the same change of two alike
        # lines of one function): the entry stands while one of them survives.
        surviving = {o.mutant for o in result.outcomes if o.status in ("survived", "timeout")}
        for outcome in result.outcomes:
            survived = outcome.status in ("survived", "timeout")
            kind = ledger.classify(outcome.mutant).kind
            if survived and kind == "unclassified":
                problems.append(f"unclassified survivor {outcome.mutant.short()}")
            elif (outcome.status == "killed" and kind != "unclassified"
                  and outcome.mutant not in surviving):
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
