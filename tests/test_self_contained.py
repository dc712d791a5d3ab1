"""The repository's facts live in the repository: no file cites a document
it does not hold, or a tracker's issue by number, and every module
docstring in src says why in a few lines. A reader of a clone (or of an
installed wheel's sources) must be able to follow every reference."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCOPE = ("src", "spec", "tests", "benchmarks", "conformance", "README.md")


def joined(*parts: str) -> str:
    """Text assembled at run time, so that neither this file nor its compiled
    form holds (and so cites) what it forbids."""
    return "".join(parts)


OUTSIDE = re.compile("|".join([
    joined("CONTRACT", r"\.md"), joined("DESIGN", r"\.md"), joined("BUGS", r"\.md"),
    joined("issue", " [0-9]"),
]))
MAX_MODULE_DOCSTRING_LINES = 10


def files_in_scope(root: Path) -> list[Path]:
    out: list[Path] = []
    for name in SCOPE:
        top = root / name
        if top.is_file():
            out.append(top)
        elif top.is_dir():
            out.extend(path for path in sorted(top.rglob("*"))
                       if path.is_file() and "__pycache__" not in path.parts)
    return out


def outside_citations(root: Path) -> list[str]:
    """``file:line: text`` for every line that cites an outside document or
    an issue number, as ``grep -rn`` over the scope would print it."""
    found: list[str] = []
    for path in files_in_scope(root):
        text = path.read_bytes().decode("utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line):
                found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    return found


def long_module_docstrings(src: Path) -> list[str]:
    """``file: N lines`` for each module docstring whose text has more lines
    than the limit (a closing quote on a line of its own adds none)."""
    found: list[str] = []
    for path in sorted(src.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        text = ast.get_docstring(tree, clean=False)
        if text is None:
            continue
        lines = len(text.splitlines())
        if lines > MAX_MODULE_DOCSTRING_LINES:
            found.append(f"{path.relative_to(src)}: {lines} lines")
    return found


def test_no_file_cites_a_document_outside_the_repository_or_an_issue_number() -> None:
    assert len(files_in_scope(ROOT)) > 500
    assert outside_citations(ROOT) == []


def test_no_module_docstring_in_src_runs_over_ten_lines() -> None:
    assert long_module_docstrings(ROOT / "src") == []


def test_the_checks_see_a_planted_citation_and_a_long_docstring(tmp_path: Path) -> None:
    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "page.md").write_text(
        joined("fine\nas ", "DESIGN", ".md says\n"), encoding="utf-8")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text(
        joined('"""Found in ', "issue", ' 12."""\n'), encoding="utf-8")
    (tmp_path / "README.md").write_text("see BUGS-list, issue #12 upstream\n", encoding="utf-8")
    assert outside_citations(tmp_path) == [
        joined("spec/page.md:2: as ", "DESIGN", ".md says"),
        joined("tests/test_x.py:1: ", '"""Found in ', "issue", ' 12."""'),
    ]
    src = tmp_path / "src"
    src.mkdir()
    ten = "\n".join(f"line {i}" for i in range(9))
    (src / "short.py").write_text(f'"""Why.\n{ten}\n"""\nX = 1\n', encoding="utf-8")
    body = "\n".join(f"line {i}" for i in range(10))
    (src / "long.py").write_text(f'"""Why.\n{body}\n"""\n', encoding="utf-8")
    (src / "bare.py").write_text("X = 1\n", encoding="utf-8")
    assert long_module_docstrings(src) == ["long.py: 11 lines"]
