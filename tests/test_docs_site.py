"""The documentation site (mkdocs.yml over spec/) builds with warnings as
errors, and that build does reject a broken link or anchor."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("mkdocs")


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config),
         "-d", str(site)],
        capture_output=True, text=True, timeout=300, check=False,
    )


def test_the_site_builds_with_warnings_as_errors(tmp_path: Path) -> None:
    done = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    # the normative pages are the site's pages, a requirement's anchor included
    evict = (tmp_path / "site" / "evict" / "index.html").read_text(encoding="utf-8")
    assert 'id="EVICT-IDLE-ONLY"' in evict
    assert (tmp_path / "site" / "new" / "index.html").exists()


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
