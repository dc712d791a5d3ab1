"""The mutation benchmark's own logic (the benchmark itself is the nightly
job, benchmarks/README.md): which mutants count as annotation-only, how
the killing ids are read, and that every ledger entry still names a mutant
cosmic-ray makes of the current reference file (so an edit of a reference
cannot leave stale verdicts behind)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # benchmarks/ is a package at the repository root
    sys.path.insert(0, str(ROOT))

from benchmarks.mutation import TARGETS, annotation_only, killed_by  # noqa: E402
from benchmarks.mutation_ledger import load_ledger  # noqa: E402

FUTURE = "from __future__ import annotations\n"


def test_a_change_inside_annotations_only_is_annotation_only() -> None:
    original = FUTURE + "def f(x: int | None) -> int | None:\n    y: int | None = x\n    return y\n"
    mutated = FUTURE + "def f(x: int & None) -> int - None:\n    y: int ^ None = x\n    return y\n"
    assert annotation_only(original, mutated)


def test_a_change_in_code_is_not_annotation_only() -> None:
    original = FUTURE + "def f(x: int) -> bool:\n    return isinstance(x, int | str)\n"
    mutated = FUTURE + "def f(x: int) -> bool:\n    return isinstance(x, int & str)\n"
    assert not annotation_only(original, mutated)


def test_annotations_count_without_postponed_evaluation() -> None:
    original = "def f(x: int | None) -> None:\n    pass\n"
    mutated = "def f(x: int & None) -> None:\n    pass\n"
    assert not annotation_only(original, mutated)  # evaluated at def time: a real change


def test_killing_ids_are_read_from_the_fail_lines() -> None:
    output = ("  PASS       EVICT-ZERO  MUST ...\n  FAIL       EVICT-EXACT-N  MUST ...\n"
              "FAIL EVICT-EXACT-N (MUST): ...\n  FAIL       LRU-LIVENESS  MUST ...\n")
    assert killed_by(output) == ("EVICT-EXACT-N", "LRU-LIVENESS")
    error = "policyspec: error: cannot import x"
    assert killed_by(error + "\n") == (error,)


def test_every_ledger_entry_names_a_mutant_of_the_current_file() -> None:
    pytest.importorskip("cosmic_ray", reason="the mutation extra is not installed")
    from benchmarks.mutation import mutants_of

    ledger = load_ledger()
    made = {m.id for target in TARGETS for m in mutants_of(target)}
    stale = [m.short() for m in [*ledger.equivalent, *ledger.missing] if m not in made]
    assert not stale, f"ledger entries that no longer match any mutant: {stale}"
    assert not set(ledger.equivalent) & set(ledger.missing), "a mutant with two verdicts"
    assert all(reason.strip() for reason, _ in ledger.equivalent.values())
    assert all(check.strip() for check in ledger.missing.values())


def test_a_target_with_further_option_sets_runs_each_check_until_one_fails(tmp_path: Path) -> None:
    import shlex

    from benchmarks.mutation import Target, check_command

    plain = Target("x.py", "m:C", "core")
    assert shlex.split(check_command(plain, tmp_path, "4"))[0] == "env"
    chained = Target("x.py", "m:C", "arc", ("--capacity", "8"), (("--engine", "size"),))
    argv = shlex.split(check_command(chained, tmp_path, "4"))
    assert argv[:2] == ["sh", "-c"]
    first, second = argv[2].split(" && ")
    assert first.endswith("--capacity 8") and second.endswith("--engine size")
    assert first.split()[:3] == second.split()[:3]  # the same scratch PYTHONPATH and Python
