"""The normative sentence of a requirement, read from its spec page, for
reports that show a failure next to what the spec says.

A requirement's text starts at its anchor (``<a id="ID"></a>**ID** (MUST,
core): ...``) and runs to the end of that paragraph (spec/README.md). The
registry's title is the one-line summary; this is the sentence itself.
"""

from __future__ import annotations

import re
from functools import cache

from policyspec.registry import load_registry, spec_dir

__all__ = ["requirement_text"]

_LEAD = re.compile(r"^\*\*[A-Z0-9-]+\*\*\s*\([^)]*\):\s*")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")


@cache
def _page(name: str) -> str:
    try:
        return (spec_dir() / name).read_text(encoding="utf-8")
    except (OSError, FileNotFoundError):
        return ""


@cache
def requirement_text(requirement: str) -> str:
    """The requirement's sentence in plain text (Markdown links and
    emphasis dropped), or its registry title when the page cannot be read;
    "" for an id the registry does not know."""
    known = load_registry().get(requirement)
    if known is None:
        return ""
    marker = f'<a id="{requirement}"></a>'
    page = _page(known.spec_file)
    start = page.find(marker)
    if start < 0:
        return known.title
    paragraph = page[start + len(marker):].split("\n\n", 1)[0]
    text = " ".join(paragraph.split())
    text = _LEAD.sub("", text)
    text = _LINK.sub(r"\1", text).replace("**", "")
    return text or known.title
