"""The vLLM releases policyspec follows, one folder each (``v0_33/``,
``v0_34/``: a ``release.py`` defining ``RELEASE`` and the ``signature.json``
drift knows it by; a ``manager.py`` when its manager makes new calls,
``vllm.manager.emulation``), and which is installed here. Shared code reads
these records, so following a release starts with adding a folder
(spec/drift.md); ``POLICYSPEC_RELEASES`` names more directories to scan. A
policy that fits two revisions is driven as the installed vLLM's.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

__all__ = ["ENV", "RELEASES", "Release", "discover", "find", "installed_release",
           "release_of", "releases_text"]

ENV = "POLICYSPEC_RELEASES"
"""Directories (``os.pathsep``-separated) scanned for release folders after
this package's own; read once, when the package is imported."""

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Release:
    version: str
    """The first release of the series (``0.34.0``); patch releases of the
    same series ship the same revision."""
    revision: str
    """Its ``CachePolicy`` API revision (policyspec.protocols.REVISIONS)."""
    summary: str = ""
    """The revision's one-line summary in the revision table."""
    methods: tuple[tuple[str, str], ...] = ()
    """The revision's methods as its manager calls them, ``(call, kind)``
    (kind: core, abstract or hook; protocols.MethodSpec)."""
    evidence: tuple[str, ...] = ()
    """Methods no earlier revision has: a class that defines one itself is
    detected as this revision. Empty for the releases detection has
    hand-written rules for (their evidence is parameter lists)."""
    manager_touches: bool = True
    """Whether its manager has ``touch`` (and calls the policy's)."""
    counts_once: bool = False
    """Whether its store threshold counts a key once per request, and its
    store events carry the storing request (spec/manager.md)."""
    policy_home: str = "vllm.v1.kv_offload.cpu.policies.base"
    """The vLLM module its ``CachePolicy`` comes from."""
    intree: tuple[tuple[str, str], ...] = ()
    """Its in-tree policies, ``(module, class name)``; the stand-in of each
    is the class of that name in ``policyspec.vllm.standins.intree``."""
    references: tuple[tuple[str, str], ...] = ()
    """policyspec's reference policies that behave as its in-tree ones,
    ``(label, module:Class)``, which ``simulate`` compares a target with;
    empty: those of the newest older release that names some."""
    folder: Path | None = None
    """The folder it was read from (set by ``discover``)."""

    @property
    def series(self) -> str:
        return ".".join(self.version.split(".")[:2])

    @property
    def version_key(self) -> tuple[int, ...]:
        return _version_key(self.version)

    @property
    def signature(self) -> Path | None:
        """Its drift fingerprint (``signature.json`` in its folder), if any."""
        if self.folder is None:
            return None
        path = self.folder / "signature.json"
        return path if path.is_file() else None


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version)[:4])


def _load(folder: Path) -> Release:
    """The ``RELEASE`` of ``folder/release.py``. A folder whose file does not
    define one is a bug of whoever added it: ValueError naming the file."""
    path = folder / "release.py"
    name = f"policyspec.releases.{folder.name}.release"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ValueError(f"{path}: cannot be loaded")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found = getattr(module, "RELEASE", None)
    if not isinstance(found, Release):
        raise ValueError(f"{path}: defines no RELEASE = Release(...)")
    return replace(found, folder=folder)


def discover(extra: Iterable[Path] = ()) -> tuple[Release, ...]:
    """Every release folder (a directory with a ``release.py``) in this
    package and in ``extra``, oldest version first. Two folders of one
    revision or one series are a mistake: ValueError naming both."""
    found: list[Release] = []
    for directory in (HERE, *extra):
        for folder in sorted(Path(directory).iterdir()) if Path(directory).is_dir() else ():
            if (folder / "release.py").is_file():
                found.append(_load(folder))
    found.sort(key=lambda r: _version_key(r.version))
    for i, a in enumerate(found):
        for b in found[i + 1:]:
            if a.revision == b.revision or a.series == b.series:
                raise ValueError(f"{a.folder} and {b.folder} are both vLLM {a.series} "
                                 f"or both revision {a.revision}")
    return tuple(found)


def _env_dirs() -> list[Path]:
    return [Path(p) for p in os.environ.get(ENV, "").split(os.pathsep) if p]


RELEASES = discover(_env_dirs())
"""Releases with a revision policyspec drives, oldest first."""


def find(revision: str) -> Release | None:
    """The release that ships ``revision``, or None."""
    return next((r for r in RELEASES if r.revision == revision), None)


def release_of(version: str) -> Release | None:
    """The release series ``version`` belongs to, or None when policyspec
    does not know it (``policyspec drift`` says how it differs)."""
    series = ".".join(version.split("+")[0].split(".")[:2])
    return next((r for r in RELEASES if r.series == series), None)


def installed_release() -> tuple[str, Release | None] | None:
    """(the installed vLLM's version, its release) or None when no vLLM
    distribution is installed."""
    try:
        version = importlib.metadata.version("vllm")
    except importlib.metadata.PackageNotFoundError:
        return None
    return version, release_of(version)


def releases_text() -> str:
    """The releases policyspec follows and their revisions, for help texts:
    ``R9 in vLLM 0.33.0, R10 in vLLM 0.34.0``."""
    return ", ".join(f"{r.revision} in vLLM {r.version}" for r in RELEASES)
