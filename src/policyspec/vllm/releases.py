"""The vLLM releases policyspec follows and the API revision each ships
(spec/contract.md, R9 and R10), and which of them is installed here.

A policy that fits two revisions (one written for vLLM 0.33 that still
defines ``touch`` also fits 0.34) is driven as the installed vLLM's
revision; ``installed_revision`` reads that from the package metadata,
without importing vLLM or its dependencies.
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass

__all__ = ["RELEASES", "Release", "emulated", "installed_release", "manager_release", "release_of",
           "releases_text"]


@dataclass(frozen=True)
class Release:
    version: str
    """The first release of the series (``0.34.0``); patch releases of the
    same series ship the same revision."""
    revision: str
    """Its ``CachePolicy`` API revision (policyspec.protocols.REVISIONS)."""

    @property
    def series(self) -> str:
        return ".".join(self.version.split(".")[:2])


RELEASES = (
    Release("0.33.0", "R9"),
    Release("0.34.0", "R10"),
)
"""Releases with a revision policyspec drives, oldest first."""


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


def manager_release(api: str) -> Release | None:
    """The release whose manager policyspec emulates to drive a policy of
    API revision ``api`` (the vllm-manager and trace engines, ``record``,
    ``simulate``): the release that ships ``api``, or for an older revision
    with the request hooks (R8) the oldest release policyspec follows,
    whose manager calls the same hooks. None for a revision without the
    hooks: no emulated manager drives it, the engines call it directly."""
    from policyspec.protocols import REVISIONS

    revision = REVISIONS.get(api)
    if revision is None or not revision.hooks:
        return None
    return next((r for r in RELEASES if r.revision == api), RELEASES[0])


def emulated(api: str, *, manager: bool = True) -> str:
    """What a run emulated for a policy of revision ``api``, in words: the
    vLLM release whose API it called and, when the run drove a manager
    (``manager``), whose manager. A verdict holds for the vLLM it was
    reached on, so every report and help names it."""
    from policyspec.protocols import REVISIONS

    shipped = next((r for r in RELEASES if r.revision == api), None)
    revision = REVISIONS.get(api)
    if shipped is not None:
        api_text = f"vLLM {shipped.version}'s API"
    elif revision is not None and not revision.released:
        api_text = "an API no vLLM release shipped"
    else:
        api_text = f"an API from before vLLM {RELEASES[0].version}"
    if not manager:
        return api_text
    release = manager_release(api)
    if release is None:
        return f"{api_text}; no release's manager emulated"
    if release is shipped:
        return f"vLLM {release.version}'s manager and API"
    return f"{api_text}, driven through vLLM {release.version}'s manager"


def releases_text() -> str:
    """The releases policyspec follows and their revisions, for help texts:
    ``R9 in vLLM 0.33.0, R10 in vLLM 0.34.0``."""
    return ", ".join(f"{r.revision} in vLLM {r.version}" for r in RELEASES)
