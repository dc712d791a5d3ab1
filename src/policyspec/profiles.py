"""Profiles are data: which requirements apply, and the refinement (if any)
that fixes the victims an eviction must return.

The registry declares every built-in profile (``[profile]`` in
spec/requirements/*.toml); engines are handed a ``Profile`` and step its
model (``Profile.model``), never branching on its name. core has no
refinement (any allowed outcome is accepted, the lfu-cache pattern); lru
and arc plug in a ``model.step.Refinement``. A profile of one's own is
registered with ``register_profile`` or named on the command line as
``package.module:NAME`` (spec/extending.md).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from policyspec.model.step import Diagnosis, ProfileModel, Refinement
from policyspec.registry import load_profile_entries

__all__ = [
    "PROFILES",
    "Diagnosis",
    "Profile",
    "Refinement",
    "descriptions",
    "get_profile",
    "register_profile",
]


@dataclass(frozen=True)
class Profile:
    """A named set of requirements and the refinement that makes it exact."""

    name: str
    includes: tuple[str, ...]
    """Registry profiles whose requirements apply (lru includes core)."""
    refinement: Refinement | None = None
    description: str = ""
    api: str | None = None
    """The API revision of the vLLM release this profile describes exactly
    (registry ``api``), or None: a policy that fits several revisions is
    driven as this one under the profile."""

    @property
    def exact(self) -> bool:
        return self.refinement is not None

    def model(self, capacity: int | None) -> ProfileModel:
        """The model of a freshly built policy of ``capacity``."""
        return ProfileModel.fresh(self.refinement, capacity)


PROFILES: dict[str, Profile] = {}
"""Profiles registered at run time, by name (the registry's come first)."""


def register_profile(profile: Profile) -> Profile:
    """Make a profile available to ``--profile NAME``."""
    if profile.name in PROFILES or profile.name in load_profile_entries():
        raise ValueError(f"profile {profile.name!r} is already registered")
    PROFILES[profile.name] = profile
    return profile


def get_profile(name: str) -> Profile:
    """The profile called ``name``: one the registry declares, one
    registered, or ``package.module:NAME`` (a ``Profile`` object in an
    importable module). ValueError names the choices."""
    if name in PROFILES:
        return PROFILES[name]
    entries = load_profile_entries()
    entry = entries.get(name)
    if entry is not None:
        refinement = _build(entry.refinement) if entry.refinement else None
        profile = Profile(entry.name, entry.includes, refinement, entry.description, entry.api)
        PROFILES[name] = profile
        return profile
    if ":" in name:
        found = _load(name)
        if not isinstance(found, Profile):
            raise ValueError(f"{name} is a {type(found).__name__}, not a policyspec Profile")
        return found
    choices = ", ".join(sorted({*entries, *PROFILES}))
    raise ValueError(f"unknown profile {name!r} (choose from: {choices}, or "
                     "package.module:NAME)")


def descriptions() -> dict[str, str]:
    """Every profile ``--profile NAME`` accepts (the registry's and the ones
    registered at run time) with its one-line description: core first, then
    by name."""
    found = {name: entry.description for name, entry in load_profile_entries().items()}
    for name, profile in PROFILES.items():
        found.setdefault(name, profile.description)
    return dict(sorted(found.items(), key=lambda item: (item[0] != "core", item[0])))


def _build(path: str) -> Refinement:
    """An instance of the refinement class the registry names."""
    cls = _load(path)
    if not callable(cls):
        raise ValueError(f"{path} is not a class")
    refinement: Refinement = cls()
    return refinement


def _load(path: str) -> object:
    module_name, _, attr = path.partition(":")
    try:
        module = importlib.import_module(module_name)
        return getattr(module, attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot load {path}: {exc}") from None
