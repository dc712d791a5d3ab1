"""The requirement registry and the spec text agree.

Every id in spec/requirements/*.toml is defined exactly once, at the anchor
the registry names, with the registry's level and profile; the spec defines
no id the registry lacks; links between spec pages resolve. Generic over the
registry files, so it covers any TOML added later.
"""

from __future__ import annotations

import re
import tomllib
from functools import cache

import pytest

from policyspec.registry import LEVELS, Requirement, load_registry, spec_dir
from policyspec.subject import KNOWN_CAPABILITIES

ID_FORMAT = re.compile(r"[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)+")
PROFILE_FORMAT = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9.]+)*")
ANCHOR = re.compile(r'<a id="([^"]*)"></a>')
DEFINITION = re.compile(r"\*\*([A-Z][A-Z0-9]*(?:-[A-Z0-9]+)+)\*\* \(")
LINK = re.compile(r"\]\(([^)#\s]+\.md)?(?:#([^)\s]+))?\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)

try:
    REGISTRY = load_registry()
    LOAD_ERROR: ValueError | None = None
except ValueError as error:  # reported by test_registry_loads, not at collection
    REGISTRY, LOAD_ERROR = {}, error


@cache
def prose(name: str) -> str:
    """A spec page without its fenced code blocks: text in a fence renders
    literally, so it defines nothing."""
    return FENCE.sub("", (spec_dir() / name).read_text(encoding="utf-8"))


def spec_pages() -> list[str]:
    return sorted(str(p.relative_to(spec_dir())) for p in spec_dir().rglob("*.md"))


def by_id() -> list[Requirement]:
    return list(REGISTRY.values())


def test_registry_loads_with_unique_ids() -> None:
    assert LOAD_ERROR is None, f"load_registry failed: {LOAD_ERROR}"
    entries = 0
    for path in sorted((spec_dir() / "requirements").glob("*.toml")):
        with path.open("rb") as handle:
            entries += len(tomllib.load(handle).get("requirement", []))
    assert entries, f"no requirement found under {spec_dir() / 'requirements'}"
    assert entries == len(REGISTRY), f"{entries} entries but {len(REGISTRY)} distinct ids"


@pytest.mark.parametrize("req", by_id(), ids=lambda r: r.id)
def test_entry_fields_are_well_formed(req: Requirement) -> None:
    assert ID_FORMAT.fullmatch(req.id), f"{req.id!r} is not UPPER-KEBAB"
    assert req.level in LEVELS, f"{req.id}: level {req.level!r} not in {LEVELS}"
    assert PROFILE_FORMAT.fullmatch(req.profile), f"{req.id}: bad profile {req.profile!r}"
    assert req.title.strip(), f"{req.id}: empty title"
    assert req.anchor == f"{req.spec_file}#{req.id}", (
        f"{req.id}: anchor {req.anchor!r} must be 'file.md#{req.id}'"
    )
    unknown = set(req.needs) - KNOWN_CAPABILITIES
    assert not unknown, f"{req.id}: needs unknown capabilities {sorted(unknown)}"


@pytest.mark.parametrize("req", by_id(), ids=lambda r: r.id)
def test_entry_is_defined_once_at_its_anchor(req: Requirement) -> None:
    page = spec_dir() / req.spec_file
    assert page.is_file(), f"{req.id}: anchor names {req.spec_file}, which is not in spec/"
    text = prose(req.spec_file)
    marker = f'<a id="{req.id}"></a>'
    assert text.count(marker) == 1, (
        f"{req.id}: {req.spec_file} has {text.count(marker)} copies of {marker}, "
        "the spec requires exactly one"
    )
    line = next(ln for ln in text.splitlines() if marker in ln)
    expected = f"{marker}**{req.id}** ({req.level}, {req.profile})"
    assert expected in line, (
        f"{req.id}: definition line is {line.strip()!r}; "
        f"the registry requires it to contain {expected!r}"
    )
    elsewhere = [
        name
        for name in spec_pages()
        if name != req.spec_file and (marker in prose(name) or f"**{req.id}** (" in prose(name))
    ]
    assert not elsewhere, f"{req.id}: also defined in {elsewhere}"


@pytest.mark.parametrize("name", spec_pages())
def test_page_defines_only_registered_ids(name: str) -> None:
    text = prose(name)
    orphans = sorted(
        {a for a in ANCHOR.findall(text) if ID_FORMAT.fullmatch(a) and a not in REGISTRY}
        | {d for d in DEFINITION.findall(text) if d not in REGISTRY}
    )
    assert not orphans, f"{name} defines ids missing from the registry: {orphans}"
    defined = DEFINITION.findall(text)
    repeated = sorted({d for d in defined if defined.count(d) > 1})
    assert not repeated, f"{name} defines {repeated} more than once"


@pytest.mark.parametrize("name", spec_pages())
def test_page_links_resolve(name: str) -> None:
    here = (spec_dir() / name).parent
    for target, fragment in LINK.findall(prose(name)):
        page = (here / target).resolve() if target else spec_dir() / name
        assert page.is_file(), f"{name}: link to missing page {target!r}"
        if fragment and ID_FORMAT.fullmatch(fragment):
            assert f'<a id="{fragment}"></a>' in prose(str(page.relative_to(spec_dir()))), (
                f"{name}: link to {target or name}#{fragment}, which has no such anchor"
            )


CORE_MUSTS = [r for r in by_id() if r.profile == "core" and r.level == "MUST"]


@pytest.mark.parametrize("req", CORE_MUSTS, ids=lambda r: r.id)
def test_every_core_must_names_what_vllm_relies_on(req: Requirement) -> None:
    """Core is what the manager relies on (spec/design.md): the text of a core
    MUST says which manager behaviour it protects (``*Protects:*``) or which
    sentence of vLLM's documented contract it enforces (``*Enforces:*``).
    A relation that only correct adaptive designs break belongs to an exact
    profile or is a SHOULD."""
    text = prose(req.spec_file)
    start = text.index(f'<a id="{req.id}"></a>')
    ends = [i for i in (text.find('<a id="', start + 1), text.find("\n## ", start)) if i > 0]
    section = text[start : min(ends, default=len(text))]
    assert "*Protects:*" in section or "*Enforces:*" in section, (
        f"{req.id} ({req.spec_file}) is a core MUST whose text names neither the manager "
        "behaviour it protects ('*Protects:* ...') nor the sentence of vLLM's documented "
        "contract it enforces ('*Enforces:* \"...\"')"
    )
