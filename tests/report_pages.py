"""Shared by the report-page tests: runs whose reports the pages are made
from (small exhaustive runs: deterministic and quick), and a reader of a
page's structure (stdlib ``html.parser``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from policyspec.cli import main

ROOT = Path(__file__).resolve().parent.parent
FAULTY = ROOT / "tests" / "faulty"

READ_VICTIM = f"{FAULTY / 'mark_non_evictable_does_not_pin.py'}:Policy"
"""Evicts a key being read: EVICT-IDLE-ONLY in three steps (idle, read, evict)."""
IN_FLIGHT_VICTIM = f"{FAULTY / 'v09_evicts_in_flight_first.py'}:Policy"
NEWEST_FIRST = f"{FAULTY / 'g09_victims_newest_first.py'}:Policy"
LRU = "policyspec.reference:LRUCachePolicy"
ARC = "policyspec.reference:ARCCachePolicy"


UNJUDGED = 3
"""``check``'s exit code for a run without failure: the exhaustive engine
alone leaves the MUSTs other engines exercise unjudged (policyspec.reports.verdict)."""


def check(target: str, out: Path, *extra: str, profile: str = "core", depth: int = 3,
          keys: int = 3) -> int:
    """``policyspec check`` with the exhaustive engine, writing
    ``out.json`` and ``out.html``."""
    return main(["check", target, "--profile", profile, "--engine", "exhaustive",
                 "--depth", str(depth), "--keys", str(keys), "-q",
                 "--json-report", str(out.with_suffix(".json")),
                 "--html-report", str(out.with_suffix(".html")), *extra])


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    text: str = ""
    children: list[Element] = field(default_factory=list)


class Page(HTMLParser):
    """Every element with its attributes, and the page's text, inline
    script and style."""

    VOID = frozenset({"meta", "link", "br", "img", "input", "hr", "source", "col", "wbr"})

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[Element] = []
        self.scripts: list[str] = []
        self.styles: list[str] = []
        self._open: list[Element] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs})
        if self._open:
            self._open[-1].children.append(element)
        self.elements.append(element)
        if tag not in self.VOID:
            self._open.append(element)

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            if self._open.pop().tag == tag:
                break

    def handle_data(self, data: str) -> None:
        for element in self._open:
            element.text += data
        if self._open and self._open[-1].tag == "script":
            self.scripts.append(data)
        if self._open and self._open[-1].tag == "style":
            self.styles.append(data)

    def find(self, tag: str, **attrs: str) -> list[Element]:
        return [e for e in self.elements if e.tag == tag and all(
            (v in e.attrs.get(k.rstrip("_"), "").split()) if k.rstrip("_") == "class"
            else e.attrs.get(k.rstrip("_")) == v for k, v in attrs.items())]


def external_references(text: str) -> list[str]:
    """Everything in a page that makes a browser fetch or go elsewhere:
    scripts, styles, images, frames, fonts from a source, links that are
    not to the page itself, and URLs in style or script."""
    page = Page(text)
    found = []
    for element in page.elements:
        for name, value in element.attrs.items():
            if name in ("src", "srcset", "data", "poster", "action", "formaction", "background"):
                found.append(f"<{element.tag} {name}={value!r}>")
            elif name == "href" and not value.startswith("#"):
                found.append(f"<{element.tag} href={value!r}>")
            elif "://" in value or value.startswith("//"):
                found.append(f"<{element.tag} {name}={value!r}>")
        if element.tag in ("link", "iframe", "img", "object", "embed", "base", "frame"):
            found.append(f"<{element.tag}>")
    for code in page.styles + page.scripts:
        for marker in ("url(", "@import", "://", "fetch(", "XMLHttpRequest", "import("):
            if marker in code:
                found.append(f"{marker} in inline code")
    return found
