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

__all__ = ["RELEASES", "Release", "installed_release", "release_of"]


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
