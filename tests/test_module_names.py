"""No two modules of src/policyspec share a name for different things.

A reader who meets ``verdict`` or ``manager`` in an import, a traceback or
a docstring should not have to ask which one is meant. A module (``x.py``)
and a package (``x/``) count alike. The few pairs that share a name on
purpose are listed below with the reason, and the test checks that reason
still holds, so an entry cannot outlive the pair it excuses.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "policyspec"

# Names every package may have: they say what a file is, not what it holds.
STRUCTURAL = {"__init__", "__main__"}

# A model beside its reference: reference/X.py is the plain policy whose
# behaviour model/X.py specifies, so one name for both is the point.
MODEL_AND_REFERENCE = {"arc", "lru", "lru033"}

# A command beside its engine: commands/X.py is ``policyspec X``, a thin
# front for the module or package that does the work, which it imports.
COMMAND_AND_ENGINE = {
    "drift": "vllm/drift",
    "prove": "prove",
    "report": "reports/report.py",
    "simulate": "workload/simulate.py",
    "vectors": "vectors",
}


# One record per vLLM release: releases/<folder>/release.py holds the same
# kind of thing in every folder (a Release), found by scanning, never imported
# by name.
PER_RELEASE = {"release"}


def module_names(package: Path) -> dict[str, list[str]]:
    """Each name under ``package`` and the places that bear it: modules as
    ``a/b.py`` and packages (folders holding Python) as ``a/b``."""
    places: dict[str, list[str]] = defaultdict(list)
    for path in sorted(package.rglob("*.py")):
        if "__pycache__" in path.parts or path.stem in STRUCTURAL:
            continue
        places[path.stem].append(path.relative_to(package).as_posix())
    for folder in sorted(p for p in package.rglob("*") if p.is_dir()):
        if folder.name != "__pycache__" and any(folder.glob("*.py")):
            places[folder.name].append(folder.relative_to(package).as_posix())
    return places


def shared(places: dict[str, list[str]]) -> dict[str, list[str]]:
    return {name: where for name, where in places.items() if len(where) > 1}


def allowed(name: str, where: list[str]) -> bool:
    """Whether ``where`` is exactly one of the pairs excused above."""
    if name in MODEL_AND_REFERENCE:
        return sorted(where) == [f"model/{name}.py", f"reference/{name}.py"]
    if name in COMMAND_AND_ENGINE:
        return sorted(where) == sorted([f"commands/{name}.py", COMMAND_AND_ENGINE[name]])
    if name in PER_RELEASE:
        return all(Path(w).parent.parent.as_posix() == "releases"
                   and Path(w).name == f"{name}.py" for w in where)
    return False


def imported_modules(path: Path) -> set[str]:
    """The dotted names of every ``import`` and ``from ... import`` in a file,
    at any depth (commands import their engines lazily)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_no_two_modules_share_a_name_for_different_things() -> None:
    clashes = {name: where for name, where in shared(module_names(PACKAGE)).items()
               if not allowed(name, where)}
    assert clashes == {}


@pytest.mark.parametrize("name", sorted(MODEL_AND_REFERENCE))
def test_each_model_pair_is_a_model_beside_its_reference(name: str) -> None:
    """The entry is not stale: both files of the pair still exist."""
    model = PACKAGE / "model" / f"{name}.py"
    reference = PACKAGE / "reference" / f"{name}.py"
    assert model.is_file() and reference.is_file()


@pytest.mark.parametrize("name", sorted(COMMAND_AND_ENGINE))
def test_each_command_pair_is_a_command_beside_its_engine(name: str) -> None:
    """The excuse holds: the command imports the engine that shares its name."""
    engine = COMMAND_AND_ENGINE[name].removesuffix(".py").replace("/", ".")
    dotted = f"policyspec.{engine}"
    imports = imported_modules(PACKAGE / "commands" / f"{name}.py")
    assert any(module == dotted or module.startswith(dotted + ".") for module in imports)


def test_the_check_sees_a_clash(tmp_path: Path) -> None:
    """The detector itself: a module and a package of one name, two modules of
    one name at different depths, and the excused pairs placed wrongly, are
    all clashes; structural names and excused pairs in place are not."""
    files = ["a/verdict.py", "b/c/verdict.py", "run/context.py", "prove/run.py",
             "model/lru.py", "reference/lru.py", "model/arc.py", "engines/arc.py",
             "commands/report.py", "reports/report.py", "x/__init__.py", "y/__init__.py"]
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("", encoding="utf-8")
    clashes = {name: sorted(where) for name, where in shared(module_names(tmp_path)).items()
               if not allowed(name, where)}
    assert clashes == {
        "arc": ["engines/arc.py", "model/arc.py"],
        "run": ["prove/run.py", "run"],
        "verdict": ["a/verdict.py", "b/c/verdict.py"],
    }
