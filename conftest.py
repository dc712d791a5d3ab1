"""The documentation's examples as tests (Sybil): every ``python`` and ``sh``
block of the site's pages (spec/*.md) and of README.md runs.

Python blocks run in one namespace per page, in order. Shell blocks run
with ``bash -e`` in one scratch directory per page (so a file one block
writes is there for the next), with this interpreter's scripts first on
PATH and links to the repository's examples/, conformance/ and tests/,
as in a clone. A page's blocks depend on each other (a skip comment, a
namespace, a file one block writes), so pages run in one process: the
test command runs ``pytest spec README.md`` without ``-n``. An HTML comment
just before a shell block says what is expected of it (spec/about.md):

* ``<!-- docs: exit 1 -->``: the block's last command exits 1 (default 0);
* ``<!-- docs: slow -->``: it takes long (a check at the default budget),
  so it runs under the ``docs_slow`` marker, which the main test command
  leaves out and ``.ci/run`` runs;
* ``<!-- skip: next "why" -->`` (Sybil's own): it is not run, saying why.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sybil import Document, Example, Sybil
from sybil.parsers.markdown import PythonCodeBlockParser, SkipParser
from sybil.parsers.markdown.lexers import FencedCodeBlockLexer

ROOT = Path(__file__).resolve().parent
LINKED = ("examples", "conformance", "tests")
"""Repository folders a page's scratch directory links to."""
SHELL_LIMIT = 600.0
"""Seconds one shell block may take before it is a failure (a cap, never
what a test asserts)."""
_OPTIONS = re.compile(r"<!--\s*docs:\s*(?P<options>[^>]*?)\s*-->\s*$")


@dataclass(frozen=True)
class ShellBlock:
    """A shell example and what is expected of it."""

    source: str
    exit: int = 0
    slow: bool = False


def _options(document: Document, start: int) -> tuple[int, bool]:
    """The ``<!-- docs: ... -->`` comment on the line before ``start``."""
    before = document.text[:start].rstrip("\n").rsplit("\n", 1)[-1]
    found = _OPTIONS.search(before)
    expect, slow = 0, False
    if found is None:
        return expect, slow
    for option in (o.strip() for o in found.group("options").split(",")):
        if option == "slow":
            slow = True
        elif option.startswith("exit "):
            expect = int(option.removeprefix("exit "))
        else:
            raise ValueError(f"{document.path}: unknown docs option {option!r}")
    return expect, slow


class ShellParser:
    """Fenced ``sh`` blocks, with the options of the comment before each."""

    def __init__(self) -> None:
        self.lexer = FencedCodeBlockLexer("sh")

    def __call__(self, document: Document) -> Any:
        for region in self.lexer(document):
            expect, slow = _options(document, region.start)
            region.parsed = ShellBlock(str(region.lexemes["source"]), expect, slow)
            region.evaluator = _run_shell
            yield region


def _run_shell(example: Example) -> None:
    block: ShellBlock = example.parsed
    scratch: Path = example.namespace["scratch"]
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", block.source], cwd=scratch, env=env,
        capture_output=True, text=True, timeout=SHELL_LIMIT, check=False,
    )
    if done.returncode != block.exit:
        raise AssertionError(
            f"exit {done.returncode}, the page expects {block.exit}\n"
            f"--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}"
        )


def _setup(namespace: dict[str, Any]) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="policyspec-docs-"))
    for name in LINKED:
        (scratch / name).symlink_to(ROOT / name)
    namespace["scratch"] = scratch


def _teardown(namespace: dict[str, Any]) -> None:
    shutil.rmtree(namespace["scratch"], ignore_errors=True)


pytest_collect_file = Sybil(
    parsers=[
        SkipParser(),
        PythonCodeBlockParser(future_imports=["annotations"]),
        ShellParser(),
    ],
    patterns=["spec/*.md", "README.md"],
    setup=_setup,
    teardown=_teardown,
).pytest()


SLOW_LIST = ROOT / "tests" / "slow.txt"
"""Node ids of tests marked slow by measurement (the file says how)."""


def _measured_slow() -> frozenset[str]:
    lines = SLOW_LIST.read_text().splitlines() if SLOW_LIST.exists() else []
    return frozenset(ln.strip() for ln in lines if ln.strip() and not ln.startswith("#"))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Before ``-m`` selects: ``docs_slow`` on the slow shell blocks, and
    ``slow`` on the tests tests/slow.txt lists."""
    slow = _measured_slow()
    for item in items:
        parsed = getattr(getattr(item, "example", None), "parsed", None)
        if isinstance(parsed, ShellBlock) and parsed.slow:
            item.add_marker(pytest.mark.docs_slow)
        if item.nodeid in slow:
            item.add_marker(pytest.mark.slow)


__all__ = ["ShellBlock", "ShellParser", "pytest_collect_file"]
