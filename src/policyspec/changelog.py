"""The requirement set's history (spec/CHANGELOG.md), read as data.

CI gates name requirement ids (``--known-failing`` lists, report
dashboards), so a change to an id is a change of the spec's interface. The
changelog records, per spec version, each id added, removed, re-levelled or
changed in meaning, one line each; the version number follows from those
lines by the rule of spec/CHANGELOG.md (``BUMP``), and tests/test_changelog.py
checks that the registry, the changelog and ``SPEC_VERSION`` agree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from policyspec.registry import LEVELS, spec_dir

__all__ = [
    "BUMP",
    "Change",
    "ChangelogError",
    "Version",
    "history",
    "load_changelog",
    "parse_changelog",
    "required_bump",
    "state_after",
]

KINDS = ("added", "removed", "relevelled", "stricter", "relaxed", "reworded")

BUMP = {
    "removed": "major",
    "stricter": "major",
    "added": "minor",
    "relaxed": "minor",
    "reworded": "patch",
}
"""The part of the version a change moves (``Change.bump``); a
re-levelling moves major towards MUST and minor towards SHOULD."""

_ORDER = ("patch", "minor", "major")

_HEADING = re.compile(r"^## (\d+)\.(\d+)\.(\d+)\b")
_ID = r"([A-Z][A-Z0-9]*(?:-[A-Z0-9]+)+)"
_LEVEL = "(" + "|".join(LEVELS) + ")"
_LINES = {
    "added": re.compile(rf"^- added {_ID} \({_LEVEL}, ([a-z0-9.-]+)\)(?:: (.+))?$"),
    "removed": re.compile(rf"^- removed {_ID}: (.+)$"),
    "relevelled": re.compile(rf"^- relevelled {_ID} {_LEVEL} -> {_LEVEL}: (.+)$"),
    "stricter": re.compile(rf"^- stricter {_ID}: (.+)$"),
    "relaxed": re.compile(rf"^- relaxed {_ID}: (.+)$"),
    "reworded": re.compile(rf"^- reworded {_ID}: (.+)$"),
}


class ChangelogError(ValueError):
    """spec/CHANGELOG.md has a line that says nothing the grammar knows."""


@dataclass(frozen=True)
class Change:
    """One line of the changelog."""

    version: str
    kind: str
    requirement: str
    reason: str
    line: int
    level: str | None = None
    """The level from this version on (added, relevelled)."""
    previous: str | None = None
    """The level before it (relevelled)."""
    profile: str | None = None
    """The profile (added)."""

    @property
    def bump(self) -> str:
        if self.kind == "relevelled":
            return "major" if self.level == "MUST" else "minor"
        return BUMP[self.kind]


@dataclass(frozen=True)
class Version:
    """One ``## X.Y.Z`` section."""

    number: tuple[int, int, int]
    changes: tuple[Change, ...]
    line: int

    @property
    def text(self) -> str:
        return ".".join(map(str, self.number))


@cache
def load_changelog() -> tuple[Version, ...]:
    """Every version of spec/CHANGELOG.md, newest first, as the file lists them."""
    return parse_changelog((spec_dir() / "CHANGELOG.md").read_text(encoding="utf-8"))


def parse_changelog(text: str) -> tuple[Version, ...]:
    """The versions of a changelog's text. Lines under a heading that start
    with ``- `` are entries and must follow the grammar; other lines are
    prose."""
    versions: list[Version] = []
    number: tuple[int, int, int] | None = None
    start = 0
    changes: list[Change] = []
    for index, raw in enumerate(text.splitlines(), start=1):
        heading = _HEADING.match(raw)
        if heading:
            if number is not None:
                versions.append(Version(number, tuple(changes), start))
            number = (int(heading[1]), int(heading[2]), int(heading[3]))
            start, changes = index, []
        elif raw.startswith("- ") and number is not None:
            changes.append(_parse(raw.rstrip(), ".".join(map(str, number)), index))
    if number is not None:
        versions.append(Version(number, tuple(changes), start))
    return tuple(versions)


def _parse(text: str, version: str, line: int) -> Change:
    kind = text[2:].split(" ", 1)[0]
    pattern = _LINES.get(kind)
    found = pattern.match(text) if pattern else None
    if found is None:
        raise ChangelogError(
            f"spec/CHANGELOG.md:{line}: cannot read {text!r}; an entry is one of "
            f"'- added ID (LEVEL, profile)', '- removed ID: why', "
            f"'- relevelled ID OLD -> NEW: why', '- stricter|relaxed|reworded ID: why'"
        )
    if kind == "added":
        rid, level, profile, reason = found.groups()
        return Change(version, kind, rid, reason or "", line, level=level, profile=profile)
    if kind == "relevelled":
        rid, previous, level, reason = found.groups()
        return Change(version, kind, rid, reason, line, level=level, previous=previous)
    rid, reason = found.groups()
    return Change(version, kind, rid, reason, line)


def required_bump(version: Version) -> str:
    """The largest part of the version its changes move (patch when none)."""
    return max((c.bump for c in version.changes), key=_ORDER.index, default="patch")


def history(requirement: str) -> list[Change]:
    """Every change of ``requirement``, oldest first."""
    return [
        change
        for version in reversed(load_changelog())
        for change in version.changes
        if change.requirement == requirement
    ]


def state_after(versions: tuple[Version, ...]) -> dict[str, tuple[str, str]]:
    """Replaying ``versions`` (newest first) from nothing: id -> (level,
    profile) of every id not removed. Raises ChangelogError on a change of
    an id that does not exist at that point, or an id added twice."""
    state: dict[str, tuple[str, str]] = {}
    for version in reversed(versions):
        for change in version.changes:
            rid, where = change.requirement, f"spec/CHANGELOG.md:{change.line}"
            if change.kind == "added":
                if rid in state:
                    raise ChangelogError(f"{where}: {rid} is added again")
                assert change.level is not None and change.profile is not None
                state[rid] = (change.level, change.profile)
                continue
            if rid not in state:
                raise ChangelogError(f"{where}: {rid} is {change.kind} but does not exist")
            if change.kind == "removed":
                del state[rid]
            elif change.kind == "relevelled":
                level, profile = state[rid]
                if change.previous != level:
                    raise ChangelogError(
                        f"{where}: {rid} is relevelled from {change.previous}, but it was {level}"
                    )
                assert change.level is not None
                state[rid] = (change.level, profile)
    return state
