"""The documentation site (mkdocs.yml over spec/) builds with warnings as
errors, and that build does reject a broken link or anchor. A strict build
is silent about two faults a reader sees at once, so they are checked here:
a code fence left open (the rest of the page, or the next block's text,
becomes code) and a page that shows the same block twice."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [*sorted((ROOT / "spec").glob("*.md")), ROOT / "README.md"]
"""The pages whose Markdown is read: the site's and the repository's front page."""

pytest.importorskip("mkdocs")

_FENCE = re.compile(r"^(?P<marker>`{3,}|~{3,})(?P<info>.*)$")


def fence_faults(text: str) -> list[str]:
    """Every fence fault of a Markdown page, one line each (none: ``[]``).

    The site's Markdown (Python-Markdown's fenced_code) closes a fence only
    with a line holding the opening marker alone; anything else stays code.
    So a fence is at fault when the page ends inside it, or when a line
    inside it opens a fence of its own (a marker as long with an info
    string, such as a ```` ```sh ```` after an unclosed ```` ```text ````):
    its writer took the earlier fence for closed. A page that shows
    Markdown in a fence uses a longer marker outside, which stays legal."""
    faults = []
    open_marker, opened_at = "", 0
    for number, line in enumerate(text.splitlines(), start=1):
        found = _FENCE.match(line)
        if not open_marker:
            if found is not None:
                open_marker, opened_at = found["marker"], number
            continue
        if line.rstrip() == open_marker:
            open_marker = ""
        elif (found is not None and found["info"].strip()
              and found["marker"][0] == open_marker[0]
              and len(found["marker"]) >= len(open_marker)):
            faults.append(f"line {number}: {line.strip()!r} opens a fence inside the fence "
                          f"opened at line {opened_at}, which is not closed before it")
    if open_marker:
        faults.append(f"line {opened_at}: the fence {open_marker!r} opened here is never closed")
    return faults


class _Blocks(HTMLParser):
    """The text of every ``<pre>`` and ``<p>`` of a page, in order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[tuple[str, str]] = []
        self._open: list[tuple[str, list[str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("pre", "p"):
            self._open.append((tag, []))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("pre", "p") and self._open and self._open[-1][0] == tag:
            name, parts = self._open.pop()
            self.blocks.append((name, "".join(parts)))

    def handle_data(self, data: str) -> None:
        for _, parts in self._open:
            parts.append(data)


REPEATED_LINES = 3
"""Lines a run must have for a second copy of it in one ``<pre>`` to be a
fault: one or two lines may recur on purpose (the same command run twice)."""


def repeated_blocks(html: str) -> list[str]:
    """Every repetition a built page shows, one line each (none: ``[]``):
    a ``<pre>`` or ``<p>`` whose text is another's of the same page, and a
    ``<pre>`` holding a run of ``REPEATED_LINES`` lines or more twice in a
    row, at most one line apart (a block swallowed, with its fence line, by
    an open fence above it). Runs far apart are left alone: two jobs of one
    CI file rightly share their first steps."""
    parser = _Blocks()
    parser.feed(html)
    faults = []
    seen: dict[tuple[str, str], int] = {}
    for index, (tag, text) in enumerate(parser.blocks):
        key = (tag, " ".join(text.split()))
        if not key[1]:
            continue
        if key in seen:
            faults.append(f"<{tag}> {key[1][:60]!r}... appears twice (blocks {seen[key]} "
                          f"and {index})")
        else:
            seen[key] = index
        if tag == "pre":
            faults.extend(f"<pre> {index}: {run}" for run in _twice_in_a_row(text))
    return faults


def _twice_in_a_row(text: str) -> Iterator[str]:
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    for size in range(len(lines) // 2, REPEATED_LINES - 1, -1):
        for start in range(len(lines) - 2 * size + 1):
            for gap in (0, 1):
                again = start + size + gap
                if lines[start:start + size] == lines[again:again + size]:
                    yield (f"lines {start + 1}-{start + size} are shown again from line "
                           f"{again + 1}: {lines[start]!r}...")
                    return


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config),
         "-d", str(site)],
        capture_output=True, text=True, timeout=300, check=False,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built once from spec/, for the tests that read its pages."""
    out = tmp_path_factory.mktemp("site") / "site"
    done = _build(ROOT / "mkdocs.yml", out)
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    return out


def test_the_site_builds_with_warnings_as_errors(site: Path) -> None:
    # the normative pages are the site's pages, a requirement's anchor included
    evict = (site / "evict" / "index.html").read_text(encoding="utf-8")
    assert 'id="EVICT-IDLE-ONLY"' in evict
    assert (site / "new" / "index.html").exists()


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_fence_of_a_page_is_closed(page: Path) -> None:
    assert fence_faults(page.read_text(encoding="utf-8")) == []


def test_no_built_page_shows_a_block_twice(site: Path) -> None:
    pages = sorted(site.rglob("*.html"))
    assert len(pages) >= len(PAGES) - 1  # every spec page was built (README.md is not one)
    faults = {str(page.relative_to(site)): repeated_blocks(page.read_text(encoding="utf-8"))
              for page in pages}
    assert {page: found for page, found in faults.items() if found} == {}


def _project(tmp_path: Path, link: str) -> Path:
    """A two-page site under mkdocs.yml's own settings, one page linking ``link``."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    head, _, _ = config.partition("\nnav:")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "README.md").write_text(f"# Home\n\nSee [the rule]({link}).\n")
    (docs / "rule.md").write_text('# Rule\n\n<a id="RULE-ONE"></a>**RULE-ONE** (MUST, core)\n')
    project = tmp_path / "mkdocs.yml"
    project.write_text(
        head.replace("docs_dir: spec", f"docs_dir: {docs}")
        + "\nnav:\n  - README.md\n  - rule.md\n"
    )
    return project


@pytest.mark.parametrize(
    ("link", "builds"),
    [("rule.md#RULE-ONE", True), ("rule.md#RULE-TWO", False), ("gone.md", False)],
)
def test_the_build_rejects_a_broken_link_or_anchor(tmp_path: Path, link: str,
                                                   builds: bool) -> None:
    done = _build(_project(tmp_path, link), tmp_path / "site")
    assert (done.returncode == 0) is builds, done.stderr
    if not builds:
        assert link.split("#")[-1] in done.stderr


SYNOPSIS = "".join(f"policyspec {name} TARGET   # what {name} does\n"
                   for name in ("check", "replay", "prove", "report"))


@pytest.mark.parametrize(("page", "fault"), [
    # the page ends inside a fence: everything after it is code
    (f"# Page\n\n```text\n{SYNOPSIS}\nMore prose.\n", "never closed"),
    (f"# Page\n\n~~~\n{SYNOPSIS}", "never closed"),
    (f"# Page\n\n````markdown\n{SYNOPSIS}```\n", "never closed"),
    # the fence closes, but swallowed the next block's opening line (check.md's fault)
    (f"# Page\n\n```text\n{SYNOPSIS}```sh\n{SYNOPSIS}```\n", "opens a fence inside"),
    (f"# Page\n\n~~~text\n{SYNOPSIS}~~~python\nx = 1\n~~~\n", "opens a fence inside"),
    # two blocks closed, the third never
    ("# Page\n\n```sh\nls\n```\n\n```sh\nls\n```\n\n```python\nx = 1\n", "never closed"),
])
def test_a_fence_fault_is_found(tmp_path: Path, page: str, fault: str) -> None:
    made_up = tmp_path / "page.md"
    made_up.write_text(page, encoding="utf-8")
    found = fence_faults(made_up.read_text(encoding="utf-8"))
    assert len(found) == 1 and fault in found[0], found


@pytest.mark.parametrize("page", [
    f"# Page\n\n```text\n{SYNOPSIS}```\n\n```sh\n{SYNOPSIS}```\n",
    # Markdown shown in a longer fence, and a fence of the other character inside
    "# Page\n\n````markdown\n```sh\nls\n```\n````\n\n~~~\n```sh\n~~~\n",
    "# Page\n\nNo code at all; ``` in prose is not at a line's start.\n",
])
def test_closed_fences_are_not_faults(page: str) -> None:
    assert fence_faults(page) == []


def _site_of(tmp_path: Path, page: str) -> str:
    """The HTML mkdocs builds, under mkdocs.yml's settings, of a site whose
    one page (besides its home) is ``page``."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    head, _, _ = config.partition("\nnav:")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "README.md").write_text("# Home\n\nSee [the page](page.md).\n")
    (docs / "page.md").write_text(page)
    project = tmp_path / "mkdocs.yml"
    project.write_text(head.replace("docs_dir: spec", f"docs_dir: {docs}")
                       + "\nnav:\n  - README.md\n  - page.md\n")
    done = _build(project, tmp_path / "site")
    assert done.returncode == 0, done.stderr  # strict mode says nothing of these faults
    return (tmp_path / "site" / "page" / "index.html").read_text(encoding="utf-8")


PROSE = "A paragraph long enough to be read twice by anyone who reads the page through."


@pytest.mark.parametrize("page", [
    # check.md's fault: an unclosed ```text swallows the ```sh copy below it
    f"# Page\n\nA synopsis:\n\n```text\n{SYNOPSIS}```sh\n{SYNOPSIS}```\n",
    # the same copy with nothing between (one fence holding the text twice)
    f"# Page\n\n```text\n{SYNOPSIS}{SYNOPSIS}```\n",
    # the same block twice, as two blocks
    f"# Page\n\n```text\n{SYNOPSIS}```\n\nAgain:\n\n```text\n{SYNOPSIS}```\n",
    # the same paragraph twice
    f"# Page\n\n{PROSE}\n\nBetween.\n\n{PROSE}\n",
    f"# Page\n\n## One\n\n{PROSE}\n\n## Two\n\n{PROSE}\n",
])
def test_a_block_shown_twice_is_found(tmp_path: Path, page: str) -> None:
    assert repeated_blocks(_site_of(tmp_path, page)) != []


def test_blocks_that_share_lines_are_not_shown_twice(tmp_path: Path) -> None:
    # two CI jobs share their first steps, far apart; one command recurs
    job = "  runs-on: ubuntu-latest\n  steps:\n    - uses: actions/checkout@v4\n"
    page = (f"# Page\n\n{PROSE}\n\n```yaml\njobs:\n one:\n{job}    - run: make a\n"
            f"    - run: make b\n    - run: make c\n two:\n{job}    - run: make d\n```\n\n"
            "```sh\nls\nls\n```\n\nA different paragraph.\n")
    assert repeated_blocks(_site_of(tmp_path, page)) == []
