"""The registry, spec/CHANGELOG.md and SPEC_VERSION agree.

Replaying the changelog from its oldest version must give the registry
exactly: every id added once, with its current level and profile those of
its last line; each version heading is the bump its lines demand; the
newest heading is ``SPEC_VERSION`` and the version spec/README.md names.
Messages say which line to add, so that whoever adds an id learns here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from policyspec import SPEC_VERSION, changelog
from policyspec.changelog import (
    ChangelogError,
    Version,
    load_changelog,
    parse_changelog,
    required_bump,
    state_after,
)
from policyspec.registry import load_registry, spec_dir
from policyspec.reports.known_failing import read_known_failing

VERSIONS = load_changelog()


def test_the_changelog_reads_and_lists_versions_newest_first() -> None:
    assert VERSIONS, "spec/CHANGELOG.md lists no version"
    numbers = [v.number for v in VERSIONS]
    assert numbers == sorted(numbers, reverse=True) and len(set(numbers)) == len(numbers), (
        f"versions must be listed newest first, each once: {[v.text for v in VERSIONS]}"
    )


def test_the_newest_version_is_spec_version_and_the_one_spec_readme_names() -> None:
    assert VERSIONS[0].text == SPEC_VERSION, (
        f"spec/CHANGELOG.md's newest version is {VERSIONS[0].text}, policyspec.SPEC_VERSION "
        f"is {SPEC_VERSION}: bump SPEC_VERSION (src/policyspec/version.py) with the changelog"
    )
    readme = (spec_dir() / "README.md").read_text(encoding="utf-8")
    named = re.search(r"Spec version \*\*(\d+\.\d+\.\d+)\*\*", readme)
    assert named is not None and named[1] == SPEC_VERSION, (
        f"spec/README.md must say 'Spec version **{SPEC_VERSION}**'"
    )


def _bump(older: Version, newer: Version) -> str | None:
    (a, b, c), (x, y, z) = older.number, newer.number
    if (x, y, z) == (a + 1, 0, 0):
        return "major"
    if (x, y, z) == (a, b + 1, 0):
        return "minor"
    if (x, y, z) == (a, b, c + 1):
        return "patch"
    return None


@pytest.mark.parametrize(
    ("older", "newer"), list(zip(VERSIONS[1:], VERSIONS[:-1], strict=True)),
    ids=lambda v: v.text,
)
def test_each_version_is_the_bump_its_lines_demand(older: Version, newer: Version) -> None:
    demanded = required_bump(newer)
    made = _bump(older, newer)
    lines = "; ".join(f"line {c.line}: {c.kind} {c.requirement} ({c.bump})"
                      for c in newer.changes) or "no entries"
    assert made == demanded, (
        f"{older.text} -> {newer.text} is a {made or 'irregular'} step, but its lines demand "
        f"a {demanded} bump ({lines}); spec/CHANGELOG.md says which change moves which part"
    )


def test_replaying_the_changelog_gives_the_registry() -> None:
    try:
        replayed = state_after(VERSIONS)
    except ChangelogError as error:
        pytest.fail(str(error))
    registry = {r.id: (r.level, r.profile) for r in load_registry().values()}
    problems = []
    for rid, (level, profile) in registry.items():
        if rid not in replayed:
            problems.append(f"{rid} is in the registry but never added: put "
                            f"'- added {rid} ({level}, {profile})' under ## {VERSIONS[0].text}")
        elif replayed[rid] != (level, profile):
            was, _ = replayed[rid]
            problems.append(
                f"{rid} is {level} ({profile}) in the registry but {was} "
                f"({replayed[rid][1]}) by the changelog: add "
                f"'- relevelled {rid} {was} -> {level}: why' under ## {VERSIONS[0].text}"
            )
    for rid in sorted(set(replayed) - set(registry)):
        problems.append(f"{rid} is in the changelog but not in the registry: add "
                        f"'- removed {rid}: why' under ## {VERSIONS[0].text}")
    assert not problems, "\n".join(problems)


def test_an_unreadable_entry_is_an_error_naming_its_line() -> None:
    with pytest.raises(ChangelogError, match=r"CHANGELOG.md:2: cannot read"):
        parse_changelog("## 9.9.9\n- renamed GET-PURE to GET-NOTHING\n")
    (version,) = parse_changelog("## 9.9.9\n- relevelled GET-PURE MUST -> SHOULD: why\n")
    (change,) = version.changes
    assert (change.previous, change.level, change.bump) == ("MUST", "SHOULD", "minor")


SYNTHETIC = """
## 2.0.0
- removed TOUCH-GONE: touch order is a profile matter
- relevelled GET-PURE MUST -> SHOULD: the manager calls get for bookkeeping

## 1.0.0
- added TOUCH-GONE (MUST, core)
- added GET-PURE (MUST, core)
"""


def test_replay_rejects_changes_of_ids_that_do_not_exist_then() -> None:
    bad = parse_changelog("## 1.1.0\n- removed NEVER-ADDED: x\n## 1.0.0\n")
    with pytest.raises(ChangelogError, match="NEVER-ADDED is removed but does not exist"):
        state_after(bad)
    wrong = parse_changelog("## 1.1.0\n- relevelled A-B SHOULD -> MUST: x\n"
                            "## 1.0.0\n- added A-B (MUST, core)\n")
    with pytest.raises(ChangelogError, match="relevelled from SHOULD, but it was MUST"):
        state_after(wrong)
    assert state_after(parse_changelog(SYNTHETIC)) == {"GET-PURE": ("SHOULD", "core")}
    assert required_bump(parse_changelog(SYNTHETIC)[0]) == "major"


def test_known_failing_entries_naming_removed_or_relevelled_ids_say_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(changelog, "load_changelog", lambda: parse_changelog(SYNTHETIC))
    listing = tmp_path / "known.txt"
    listing.write_text("# ours\nTOUCH-GONE\nGET-PURE  # get refreshes recency\nNO-SUCH-ID\n")
    entries, warnings = read_known_failing(str(listing))
    assert [e.requirement for e in entries] == ["GET-PURE"]
    assert warnings == [
        f"{listing}:2: TOUCH-GONE was removed in spec 2.0.0 (touch order is a profile "
        "matter); remove the line",
        f"{listing}:3: GET-PURE is SHOULD since spec 2.0.0 (was MUST: the manager calls get "
        "for bookkeeping); its failure fails the run only with --strict",
        f"{listing}:4: NO-SUCH-ID matches no requirement",
    ]
    assert all("\n" not in w for w in warnings)
