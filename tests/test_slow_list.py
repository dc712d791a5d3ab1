"""tests/slow.txt names tests that exist: each line's file is there and
defines the test function (a renamed test would silently leave the slow
tier and come back into the test command)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_listed_slow_test_exists() -> None:
    lines = (ROOT / "tests" / "slow.txt").read_text().splitlines()
    ids = [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]
    assert ids and len(ids) == len(set(ids))
    missing = []
    for node in ids:
        path, _, rest = node.partition("::")
        function = rest.split("[", 1)[0].split("::")[-1]
        source = ROOT / path
        if not source.is_file() or f"def {function}(" not in source.read_text():
            missing.append(node)
    assert missing == []
