"""Every clause and bug label a spec page cites (C4, I6, V9, M1, ...)
resolves in spec/sources.md, with a public reference."""

from __future__ import annotations

import re
from pathlib import Path

SPEC = Path(__file__).resolve().parents[1] / "spec"
LABEL = re.compile(r"\b([CIVMSLG][0-9]{1,2})[a-z]?\b")
ROW = re.compile(r"^\| ([CIVMSLG][0-9]{1,2}) \| (.+) \| (.+) \|$", re.MULTILINE)


def listed() -> dict[str, str]:
    text = (SPEC / "sources.md").read_text(encoding="utf-8")
    return {label: where for label, _, where in ROW.findall(text)}


def test_every_label_cited_in_the_spec_is_listed_with_a_reference() -> None:
    known = listed()
    for page in sorted(SPEC.glob("*.md")):
        if page.name == "sources.md":
            continue
        for label in LABEL.findall(page.read_text(encoding="utf-8")):
            assert label in known, f"{page.name} cites {label}, which spec/sources.md lacks"


def test_every_listed_bug_names_a_public_place() -> None:
    for label, where in listed().items():
        if label[0] in "VMLSG":
            assert re.search(r"(PRs?|issues?|commit|RFC) #?[0-9a-f]+", where), (label, where)


def test_the_readme_of_the_spec_points_at_the_sources() -> None:
    assert "(sources.md)" in (SPEC / "README.md").read_text(encoding="utf-8")
