"""The fingerprints of the vLLM releases policyspec knows: each release
folder's ``signature.json`` (policyspec.releases: ``v0_33/`` is vLLM
0.33.0, R9), and one JSON file per revision recorded but not yet given a
folder, in ``known/`` beside this module. ``policyspec drift WHEEL --record
R11`` in an editable install writes ``known/R11.json`` (spec/drift.md);
moving it into the new release's folder is part of following the release.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

from policyspec.vllm.drift.fingerprint import Fingerprint

__all__ = [
    "KNOWN_DIR", "REVISION_NAME", "dumps", "known_fingerprints", "record", "version_key",
]

KNOWN_DIR = Path(__file__).resolve().parent / "known"

REVISION_NAME = re.compile(r"R\d+[a-z]?")
"""A released revision's name (R9, R10, ...); pull-request revisions such
as R6-draft have no release to record."""


def version_key(version: str) -> tuple[int, ...]:
    """``0.34.0`` -> (0, 34, 0); an unreadable version sorts first."""
    numbers = re.findall(r"\d+", version.split("+")[0])
    return tuple(int(n) for n in numbers[:4]) if numbers else (-1,)


def _stored(directory: Path | None) -> list[tuple[Path, str]]:
    """Each stored file and the revision it must name: ``directory``'s
    ``REV.json`` files, or by default every release folder's signature and
    then ``KNOWN_DIR``'s (a revision with both is read from its folder)."""
    if directory is not None:
        return [(p, p.stem) for p in sorted(directory.glob("*.json"))]
    from policyspec.releases import RELEASES

    found = [(r.signature, r.revision) for r in RELEASES if r.signature is not None]
    folders = {revision for _, revision in found}
    return found + [(p, p.stem) for p in sorted(KNOWN_DIR.glob("*.json"))
                    if p.stem not in folders]


def known_fingerprints(directory: Path | None = None) -> list[Fingerprint]:
    """Every stored fingerprint (``_stored``), oldest vLLM first. A stored
    file that does not read is a bug of policyspec: ValueError naming it."""
    found: list[Fingerprint] = []
    for path, revision in _stored(directory):
        try:
            fingerprint = Fingerprint.from_json(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: {exc}") from None
        if fingerprint.revision != revision:
            raise ValueError(f"{path}: names revision {fingerprint.revision!r}, not {revision}")
        found.append(fingerprint)
    return sorted(found, key=lambda f: version_key(f.vllm))


def record(fingerprint: Fingerprint, revision: str, directory: Path | None = None) -> Path:
    """Store ``fingerprint`` as revision ``revision``, written atomically, and
    return the path: ``directory/REV.json``, or by default the signature of
    the release folder of that revision, or ``known/REV.json`` when no
    folder has it yet."""
    from policyspec.files import write_atomic
    from policyspec.releases import find

    if not REVISION_NAME.fullmatch(revision):
        raise ValueError(f"--record {revision!r}: a revision is named R<number> (R11)")
    release = find(revision) if directory is None else None
    if release is not None and release.folder is not None:
        path = release.folder / "signature.json"
    else:
        directory = KNOWN_DIR if directory is None else directory
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{revision}.json"
    stored = replace(fingerprint, revision=revision)
    write_atomic(path, dumps(stored))
    return path


def dumps(fingerprint: Fingerprint) -> str:
    """The stored form: indented JSON with each list of names on one line,
    so that a new release's file reads (and diffs) one member per line."""
    text = json.dumps(fingerprint.to_json(), indent=1)
    return _LIST.sub(lambda m: "[" + ", ".join(_ITEM.findall(m.group(0))) + "]", text) + "\n"


_LIST = re.compile(r'\[\s*("(?:[^"\\]|\\.)*"(?:,\s*"(?:[^"\\]|\\.)*")*)\s*\]')
_ITEM = re.compile(r'"(?:[^"\\]|\\.)*"')
