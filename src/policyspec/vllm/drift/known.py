"""The fingerprints of the vLLM releases policyspec knows, one JSON file per
API revision in ``known/`` beside this module (``R9.json`` = vLLM 0.33.0),
and how a new one is recorded: ``policyspec drift WHEEL --record R11`` in
an editable install writes ``known/R11.json`` (spec/drift.md).
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


def known_fingerprints(directory: Path = KNOWN_DIR) -> list[Fingerprint]:
    """Every stored fingerprint, oldest vLLM first. A stored file that does
    not read is a bug of policyspec: ValueError naming it."""
    found: list[Fingerprint] = []
    for path in sorted(directory.glob("*.json")):
        try:
            fingerprint = Fingerprint.from_json(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: {exc}") from None
        if fingerprint.revision != path.stem:
            raise ValueError(f"{path}: names revision {fingerprint.revision!r}, not {path.stem}")
        found.append(fingerprint)
    return sorted(found, key=lambda f: version_key(f.vllm))


def record(fingerprint: Fingerprint, revision: str, directory: Path = KNOWN_DIR) -> Path:
    """Store ``fingerprint`` as revision ``revision`` (``known/REV.json``,
    written atomically) and return the path."""
    from policyspec.reports.report import write_atomic

    if not REVISION_NAME.fullmatch(revision):
        raise ValueError(f"--record {revision!r}: a revision is named R<number> (R11)")
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
