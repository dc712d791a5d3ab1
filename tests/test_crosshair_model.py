"""CrossHair can fail: a planted fault in a copy of the model's evict is
found, and the unmodified copy, checked with the same budget, is not flagged.

The fixtures in tests/crosshair_fixtures/ copy ``operations.evict`` with its
PEP 316 contract word for word. CrossHair evaluates contract strings in the
globals of the module that defines the function, so each fixture imports
every name its contract uses. The budget is CPU time per postcondition, so
load on the machine slows the test down but does not change its verdict;
the fault is found after about 3 CPU seconds, the budget gives it 6.
"""

from __future__ import annotations

import importlib.util
import inspect
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from policyspec.model import operations
from policyspec.model.evict import evict_violation

FIXTURES = Path(__file__).parent / "crosshair_fixtures"
BUDGET = ("--per_condition_timeout=6", "--per_path_timeout=2")


def crosshair_check(fixture: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "crosshair", "check", *BUDGET, str(FIXTURES / fixture)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def load(fixture: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"fixture_{Path(fixture).stem}", FIXTURES / fixture
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def line_of(fixture: str, text: str) -> int:
    lines = (FIXTURES / fixture).read_text().splitlines()
    return next(number for number, line in enumerate(lines, start=1) if text in line)


@pytest.mark.crosshair
def test_crosshair_finds_evict_ignoring_protected() -> None:
    fixture = "evict_ignores_protected.py"
    result = crosshair_check(fixture)
    assert result.returncode == 1, result.stdout + result.stderr
    # The broken postcondition is the core judge, reported at its own line.
    post = line_of(fixture, "post: evict_violation(")
    report = re.search(
        rf":{post}: error: false when calling (evict\(.*\)) \(which returns", result.stdout
    )
    assert report, result.stdout
    # The counterexample is real: replayed, it evicts a protected key.
    module = load(fixture)
    call = report.group(1)
    state, n, protected = eval(call.replace("evict(", "(", 1), vars(module))
    _, victims = module.evict(state, n, protected)
    assert evict_violation(state, n, protected, victims) == "EVICT-UNPROTECTED"


@pytest.mark.crosshair
def test_crosshair_finds_nothing_in_the_unmodified_copy() -> None:
    result = crosshair_check("evict_copy.py")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == ""


def test_the_copy_is_the_model_s_evict_word_for_word() -> None:
    # Otherwise a clean verdict on the copy would say nothing about the model.
    copy = load("evict_copy.py")
    assert (
        inspect.getsource(copy.evict).split('"""')[2]
        == (inspect.getsource(operations.evict).split('"""')[2])
    )
    contract = [ln.strip() for ln in (operations.evict.__doc__ or "").splitlines() if ":" in ln]
    for fixture in (copy, load("evict_ignores_protected.py")):
        lines = [ln.strip() for ln in (fixture.evict.__doc__ or "").splitlines()]
        assert [ln for ln in contract if ln.startswith(("pre:", "post:"))] == [
            ln for ln in lines if ln.startswith(("pre:", "post:"))
        ]
