"""The requirement registry: the single source of requirement ids.

Loaded from the TOML files in spec/requirements/ (in a wheel they travel as
``policyspec/_spec``). Every verdict names requirements by these ids.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

__all__ = [
    "LEVELS",
    "ProfileEntry",
    "Requirement",
    "load_profile_entries",
    "load_registry",
    "requirements_for",
    "spec_dir",
]

LEVELS = ("MUST", "SHOULD")


@dataclass(frozen=True)
class Requirement:
    """One normative statement of the spec."""

    id: str
    level: str
    profile: str
    title: str
    anchor: str
    needs: tuple[str, ...] = ()
    """Capabilities a policy must have for this requirement to apply (e.g.
    ``clear``, ``mark``); without them it is reported N/A."""

    @property
    def spec_file(self) -> str:
        """The spec file (relative to spec/) that holds the text."""
        return self.anchor.split("#", 1)[0]


@dataclass(frozen=True)
class ProfileEntry:
    """A profile as the registry declares it (the ``[profile]`` table of a
    requirements file): a new profile is a registry file, a spec page and,
    for an exact one, the module of its refinement (spec/extending.md)."""

    name: str
    includes: tuple[str, ...]
    """Registry profiles whose requirements apply (lru includes core)."""
    refinement: str | None
    """``package.module:Class`` of its ``model.step.Refinement``, or None."""
    description: str
    api: str | None = None
    """The API revision of the vLLM release whose policy the profile
    describes exactly (``lru-0.34``: R10), or None. A policy that fits
    several revisions is driven as this one under the profile."""


def spec_dir() -> Path:
    """spec/ as shipped in the wheel, or the source tree's spec/."""
    packaged = Path(__file__).resolve().parent / "_spec"
    if packaged.is_dir():
        return packaged
    source = Path(__file__).resolve().parents[2] / "spec"
    if source.is_dir():
        return source
    raise FileNotFoundError("policyspec: the spec/ directory is missing from this install")


def _registry_files() -> list[Path]:
    return sorted((spec_dir() / "requirements").glob("*.toml"))


@cache
def load_profile_entries() -> dict[str, ProfileEntry]:
    """Every profile the registry declares, by name."""
    found: dict[str, ProfileEntry] = {}
    for path in _registry_files():
        with path.open("rb") as handle:
            table = tomllib.load(handle).get("profile")
        if table is None:
            continue
        entry = ProfileEntry(
            name=str(table["name"]),
            includes=tuple(str(p) for p in table["includes"]),
            refinement=str(table["refinement"]) if "refinement" in table else None,
            description=str(table.get("description", "")),
            api=str(table["api"]) if "api" in table else None,
        )
        if entry.name in found:
            raise ValueError(f"{path.name}: duplicate profile {entry.name}")
        found[entry.name] = entry
    return found


@cache
def load_registry() -> dict[str, Requirement]:
    """All requirements by id, in file then declaration order. Raises
    ValueError on a malformed entry or a duplicate id."""
    found: dict[str, Requirement] = {}
    for path in _registry_files():
        with path.open("rb") as handle:
            data = tomllib.load(handle)
        for entry in data.get("requirement", []):
            req = Requirement(
                id=str(entry["id"]),
                level=str(entry["level"]),
                profile=str(entry["profile"]),
                title=str(entry["title"]),
                anchor=str(entry["anchor"]),
                needs=tuple(str(n) for n in entry.get("needs", ())),
            )
            if req.level not in LEVELS:
                raise ValueError(f"{path.name}: {req.id} has level {req.level!r}")
            if req.id in found:
                raise ValueError(f"{path.name}: duplicate requirement id {req.id}")
            found[req.id] = req
    return found


def requirements_for(profiles: Iterable[str]) -> list[Requirement]:
    """The requirements that belong to any of the given registry profiles."""
    wanted = set(profiles)
    return [r for r in load_registry().values() if r.profile in wanted]
