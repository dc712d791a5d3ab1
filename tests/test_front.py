"""The supported API is ``policyspec`` itself: every name of its ``__all__``
imports and is listed in spec/extending.md's "Supported API" section, that
section lists nothing else, ``import policyspec`` imports none of it until
used, and no doc page, example or snippet policyspec writes imports from a
deeper module."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import policyspec

ROOT = Path(__file__).resolve().parents[1]
DEEP_IMPORT = re.compile(r"^\s*(?:from\s+policyspec\.[\w.]+\s+import\b|import\s+policyspec\.)",
                         re.MULTILINE)
ROW = re.compile(r"^\| `([^`]+)` \|", re.MULTILINE)


def _supported_section() -> str:
    page = (ROOT / "spec" / "extending.md").read_text(encoding="utf-8")
    start = page.index("\n## Supported API\n")
    end = page.find("\n## ", start + 1)
    return page[start:] if end == -1 else page[start:end]


def test_every_name_of_the_front_imports() -> None:
    assert len(set(policyspec.__all__)) == len(policyspec.__all__)
    namespace: dict[str, object] = {}
    exec("from policyspec import *", namespace)  # the star import is the test
    missing = [name for name in policyspec.__all__ if name not in namespace]
    assert missing == []
    for name in policyspec.__all__:
        assert getattr(policyspec, name) is namespace[name]


def test_a_name_outside_the_front_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'assemble'"):
        policyspec.assemble  # noqa: B018 - the access is the test
    assert "assemble" not in dir(policyspec)
    assert set(policyspec.__all__) <= set(dir(policyspec))


def test_importing_the_package_imports_none_of_the_front() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import sys, policyspec; "
         "print(sorted(m for m in sys.modules if m.startswith('policyspec.')))"],
        capture_output=True, text=True, check=True)
    # only the leaf module of the versions, which imports nothing
    assert done.stdout.strip() == "['policyspec.version']"


def test_the_supported_api_section_lists_exactly_the_front() -> None:
    listed = ROW.findall(_supported_section())
    assert len(listed) == len(set(listed)), "a name is listed twice"
    assert sorted(listed) == sorted(policyspec.__all__)
    assert "Supported API" in (policyspec.__doc__ or "")
    assert "internal" in (policyspec.__doc__ or "")


def _doc_files() -> list[Path]:
    pages = sorted((ROOT / "spec").rglob("*.md"))
    examples = sorted(p for p in (ROOT / "examples").rglob("*") if p.is_file())
    return [ROOT / "README.md", *pages, *examples]


def test_no_page_or_example_imports_from_a_deeper_module() -> None:
    files = _doc_files()
    assert ROOT / "spec" / "extending.md" in files and len(files) > 20
    found = [f"{path.relative_to(ROOT)}: {match.group().strip()}" for path in files
             for match in DEEP_IMPORT.finditer(path.read_text(encoding="utf-8"))]
    assert found == []


@pytest.mark.parametrize("text, deep", [
    ("from policyspec.reports.report import Report\n", True),
    ("    from policyspec.adapters import load_subject\n", True),
    ("import policyspec.testing\n", True),
    ("from policyspec import Report, load_subject\n", False),
    ("import policyspec\n", False),
    ("`policyspec.reports.verdict` is the rule\n", False),
])
def test_the_deep_import_finder(text: str, deep: bool) -> None:
    assert bool(DEEP_IMPORT.search(text)) is deep


def test_the_snippets_and_tests_policyspec_writes_import_only_the_front() -> None:
    from policyspec.prove.repro import trace_test
    from policyspec.witness.render import measurement_repro, repro

    trace = [("insert", 0, -1), ("finish_store", 0), ("evict", 1, frozenset({0}))]
    target = "policyspec.reference:LRUCachePolicy"
    written = [
        repro(target, 4, trace),
        repro(target, 4, trace, judged=("core", "EVICT-UNPROTECTED"), seed=7),
        repro(target, 4, trace, api="R3", placeholders=("x.Y",)),
        measurement_repro(target, "cost", "cost", "COST-EVICT-LINEAR"),
        trace_test(target, "core", 4, trace, "EVICT-UNPROTECTED", "story", minimised=True),
    ]
    for text in written:
        assert DEEP_IMPORT.search(text) is None, text
        assert "from policyspec import " in text
    # The front gives what they import: they run.
    namespace: dict[str, object] = {}
    exec(compile(written[1], "snippet", "exec"), namespace)
