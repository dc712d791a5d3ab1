"""spec/development.md's map of the repository is true: every package and
root module of src/policyspec is in it, and every path it names exists; so
does every repository path another spec page names. A map that drifts from
the tree sends a newcomer to files that are gone."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "spec" / "development.md"
PACKAGE = ROOT / "src" / "policyspec"

ROW = re.compile(r"^\| `([^`]+)` \|(.*)\|$", re.MULTILINE)
TICKED = re.compile(r"`([^`\s]+)`")
PATH = re.compile(r"[\w.-]*/[\w./-]*")


def layout_section(page_text: str) -> str:
    """The text of the page's "Repository layout" section."""
    start = page_text.index("## Repository layout")
    end = page_text.find("\n## ", start + 1)
    return page_text[start:] if end < 0 else page_text[start:end]


def src_entries(package: Path) -> set[str]:
    """Each package (``name/``) and root module (``name.py``) of the package
    directory, as the map names them."""
    entries: set[str] = set()
    for child in package.iterdir():
        if child.is_dir() and any(child.rglob("*.py")):
            entries.add(child.name + "/")
        elif child.suffix == ".py":
            entries.add(child.name)
    return entries


def mapped_entries(section: str) -> set[str]:
    """The names in the first column of the section's table."""
    return {name for name, _ in ROW.findall(section)}


def named_paths(section: str, root: Path, package: Path) -> list[Path]:
    """Every path the section names: the paths of its block (from the
    repository's root) and the packages, modules and sub-packages of its
    table (from the package directory)."""
    paths: list[Path] = []
    block = section.split("```")[1]
    for token in PATH.findall(block):
        token = token.rstrip(".,:;")
        if token.strip("/"):
            paths.append(root / token)
    for name, rest in ROW.findall(section):
        paths.append(package / name)
        paths.extend(package / token for token in TICKED.findall(rest)
                     if token.endswith("/") or token.endswith(".py"))
    return paths


def problems(page_text: str, root: Path, package: Path) -> list[str]:
    section = layout_section(page_text)
    mapped = mapped_entries(section)
    out = [f"{name} is not in the map" for name in sorted(src_entries(package) - mapped)]
    out += [f"the map names {path.relative_to(root)}, which does not exist"
            for path in named_paths(section, root, package) if not path.exists()]
    return out


def test_the_map_names_every_package_and_root_module_and_nothing_absent() -> None:
    assert problems(PAGE.read_text(encoding="utf-8"), ROOT, PACKAGE) == []


def test_the_map_lists_the_packages_the_tree_has() -> None:
    section = layout_section(PAGE.read_text(encoding="utf-8"))
    for name in ("sources/", "witness/", "reports/", "model/", "cli.py", "guard.py"):
        assert name in mapped_entries(section), name
    assert len(src_entries(PACKAGE)) >= 30


def test_a_missing_module_and_a_stale_path_are_reported(tmp_path: Path) -> None:
    package = tmp_path / "src" / "pkg"
    (package / "model").mkdir(parents=True)
    (package / "model" / "state.py").write_text("", encoding="utf-8")
    (package / "cli.py").write_text("", encoding="utf-8")
    (package / "guard.py").write_text("", encoding="utf-8")
    (tmp_path / "spec").mkdir()
    page = (
        "# Development\n\n## Repository layout\n\n```\nspec/   pages\nold/    gone\n```\n\n"
        "| path | what |\n| --- | --- |\n| `model/` | the model (`model/html/`) |\n"
        "| `cli.py` | the command |\n| `merge.py` | gone too |\n\n## Tests\n"
    )
    found = problems(page, tmp_path, package)
    assert "guard.py is not in the map" in found
    assert "the map names old, which does not exist" in found
    assert "the map names src/pkg/merge.py, which does not exist" in found
    assert "the map names src/pkg/model/html, which does not exist" in found
    assert len(found) == 4


SPEC_PATH = re.compile(r"`((?:tests|src|conformance|benchmarks|spec|examples)/[\w./-]+)`")


def stale_spec_paths(spec: Path, root: Path) -> list[str]:
    """``page: path`` for each path of this repository a spec page names (in
    backticks) that does not exist. vLLM's own test paths (``tests/v1/``)
    are vLLM's, and ``module.name`` names an attribute of a module."""
    stale: list[str] = []
    for page in sorted(spec.glob("*.md")):
        for path in SPEC_PATH.findall(page.read_text(encoding="utf-8")):
            path = path.rstrip(".,:")
            if path.startswith("tests/v1/") or (root / path).exists():
                continue
            module = path.rsplit(".", 1)[0] + ".py"
            if not (root / module).is_file():
                stale.append(f"{page.name}: {path}")
    return stale


def test_every_repository_path_the_spec_pages_name_exists() -> None:
    assert stale_spec_paths(ROOT / "spec", ROOT) == []


def test_a_stale_path_in_a_page_is_reported(tmp_path: Path) -> None:
    (tmp_path / "spec").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "vllm_env.py").write_text("", encoding="utf-8")
    (tmp_path / "spec" / "a.md").write_text(
        "`src/pkg/report.py`, `tests/vllm_env.installed`, `tests/v1/test_x.py`, `spec/a.md`\n",
        encoding="utf-8")
    assert stale_spec_paths(tmp_path / "spec", tmp_path) == ["a.md: src/pkg/report.py"]


VLLM_FILES = frozenset({"lru.py", "test_evict_until.py"})
"""Files of vLLM (or a fork of it) that spec/bugs.md names as sources."""


def bug_page_problems(page_text: str, faulty: Path) -> list[str]:
    """What spec/bugs.md gets wrong about the faulty corpus: a file it names
    that is not there, or a corpus file citing the page that it leaves out.
    A name is a corpus file, a path from the repository's root, or vLLM's."""
    named = set(re.findall(r"`([\w/]+\.py)`", page_text))
    corpus = {str(path.relative_to(faulty)): path for path in faulty.rglob("*.py")}
    root = faulty.parent.parent
    out = [f"bugs.md names {name}, which is not in the corpus"
           for name in sorted(named)
           if name not in corpus and name not in VLLM_FILES and not (root / name).is_file()]
    out += [f"{name} cites spec/bugs.md but the page leaves it out"
            for name, path in sorted(corpus.items())
            if "spec/bugs.md" in path.read_text(encoding="utf-8") and name not in named]
    return out


def test_the_bug_page_and_the_faulty_corpus_agree() -> None:
    page = (ROOT / "spec" / "bugs.md").read_text(encoding="utf-8")
    assert bug_page_problems(page, ROOT / "tests" / "faulty") == []


def test_a_missing_or_unlisted_corpus_file_is_reported(tmp_path: Path) -> None:
    faulty = tmp_path / "tests" / "faulty"
    faulty.mkdir(parents=True)
    (faulty / "v01_a.py").write_text('"""faulty: X\n\nspec/bugs.md V1."""\n', encoding="utf-8")
    (faulty / "v02_b.py").write_text('"""faulty: X\n\nspec/bugs.md V2."""\n', encoding="utf-8")
    (faulty / "plain.py").write_text('"""faulty: X"""\n', encoding="utf-8")
    page = "| V1 | ... | `v01_a.py` (X), `v03_gone.py` (Y); a fork's `lru.py` |\n"
    assert bug_page_problems(page, faulty) == [
        "bugs.md names v03_gone.py, which is not in the corpus",
        "v02_b.py cites spec/bugs.md but the page leaves it out",
    ]
