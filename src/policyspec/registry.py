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
    "Requirement",
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


def spec_dir() -> Path:
    """spec/ as shipped in the wheel, or the source tree's spec/."""
    packaged = Path(__file__).resolve().parent / "_spec"
    if packaged.is_dir():
        return packaged
    source = Path(__file__).resolve().parents[2] / "spec"
    if source.is_dir():
        return source
    raise FileNotFoundError("policyspec: the spec/ directory is missing from this install")


@cache
def load_registry() -> dict[str, Requirement]:
    """All requirements by id, in file then declaration order. Raises
    ValueError on a malformed entry or a duplicate id."""
    found: dict[str, Requirement] = {}
    for path in sorted((spec_dir() / "requirements").glob("*.toml")):
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
