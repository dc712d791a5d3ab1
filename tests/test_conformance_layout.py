"""Every spec section that defines requirements has its conformance module
(conformance/test_<section>.py), so ``pytest --policy`` covers every id."""

from __future__ import annotations

from pathlib import Path

from policyspec.pytest_plugin import conformance_dir
from policyspec.registry import load_registry


def test_every_spec_section_with_requirements_has_a_conformance_module() -> None:
    sections = {req.spec_file.removesuffix(".md") for req in load_registry().values()}
    modules = {
        p.stem.removeprefix("test_").replace("_", "-")
        for p in Path(conformance_dir()).glob("test_*.py")
    }
    assert sorted(sections - modules) == []
    assert sorted(modules - sections) == []


def test_each_module_names_its_own_section() -> None:
    for path in Path(conformance_dir()).glob("test_*.py"):
        section = path.stem.removeprefix("test_").replace("_", "-")
        assert f'section = "{section}"' in path.read_text(), path.name
