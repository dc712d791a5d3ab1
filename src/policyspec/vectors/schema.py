"""The golden-vector file format (spec/vectors.md): JSON Lines, a header
line, then one case per line.

Kept free of the model: a runner in any language needs only this format.
``dump_line`` is the one encoder (sorted nothing, fixed separators, ASCII),
so a file regenerates byte for byte; ``read_vectors`` checks what it reads
and says which line is wrong.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "OPS",
    "SCHEMA",
    "VectorError",
    "case_problems",
    "dump_line",
    "read_vectors",
    "vector_files",
]

SCHEMA = "policyspec-vectors/1"
"""The schema id every header carries."""

OPS = {
    "insert": ("key", "block"),
    "set_ref": ("id", "ref_cnt"),
    "get": ("key", "expect"),
    "remove": ("key",),
    "touch": ("keys",),
    "evict": ("n", "protected", "expect"),
    "clear": (),
    "mark_evictable": ("key",),
    "mark_non_evictable": ("key",),
}
"""Each call's op and the fields it must have."""

CASE_FIELDS = ("name", "profile", "capacity", "calls")


class VectorError(ValueError):
    """A vector file that does not follow the format; the message names the
    file and line."""


def dump_line(obj: dict[str, Any]) -> str:
    """One JSON Lines record, always encoded the same way."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=True) + "\n"


def _expect_problems(op: str, expect: object) -> list[str]:
    if not isinstance(expect, dict):
        return [f"{op}: expect must be an object"]
    if op == "get":
        block = expect.get("block", 0.5)
        return [] if block is None or isinstance(block, int) else ["get: expect.block must be "
                                                                   "an id or null"]
    if "victims" in expect:
        victims = expect["victims"]
        if victims is None or (isinstance(victims, list) and all(_pair(v) for v in victims)):
            return []
        return ["evict: expect.victims must be null or a list of [key, id] pairs"]
    if isinstance(expect.get("count"), int) and isinstance(expect.get("any_of"), list):
        return [] if all(_pair(v) for v in expect["any_of"]) else [
            "evict: expect.any_of must be a list of [key, id] pairs"]
    return ["evict: expect needs victims, or count and any_of"]


def _pair(value: object) -> bool:
    return isinstance(value, list) and len(value) == 2 and isinstance(value[1], int)


def case_problems(case: object) -> list[str]:
    """What is wrong with one case record (empty when it is well formed)."""
    if not isinstance(case, dict):
        return ["a case must be a JSON object"]
    problems = [f"missing field {f!r}" for f in CASE_FIELDS if f not in case]
    calls = case.get("calls")
    if not isinstance(calls, list):
        return [*problems, "calls must be a list"]
    for index, call in enumerate(calls, 1):
        op = call.get("op") if isinstance(call, dict) else None
        if op not in OPS:
            problems.append(f"call {index}: unknown op {op!r}")
            continue
        assert isinstance(call, dict)
        problems.extend(f"call {index}: {op} lacks {f!r}" for f in OPS[op] if f not in call)
        if "expect" in call:
            problems.extend(f"call {index}: {p}" for p in _expect_problems(op, call["expect"]))
    return problems


def read_vectors(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and the cases of one file; VectorError if it is not a
    vector file of this schema."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines:
        raise VectorError(f"{path}: empty file")
    try:
        header = json.loads(lines[0])
    except ValueError as exc:
        raise VectorError(f"{path}:1: not JSON ({exc})") from None
    if not isinstance(header, dict) or header.get("schema") != SCHEMA:
        raise VectorError(f"{path}:1: header must carry \"schema\": \"{SCHEMA}\"")
    cases: list[dict[str, Any]] = []
    for number, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        try:
            case = json.loads(line)
        except ValueError as exc:
            raise VectorError(f"{path}:{number}: not JSON ({exc})") from None
        problems = case_problems(case)
        if problems:
            raise VectorError(f"{path}:{number}: {'; '.join(problems)}")
        cases.append(case)
    if header.get("cases") not in (None, len(cases)):
        raise VectorError(f"{path}: header says {header['cases']} cases, file has {len(cases)}")
    return header, cases


def vector_files(directory: Path) -> Iterator[Path]:
    """The vector files of a directory (``*.jsonl``), in name order."""
    yield from sorted(directory.glob("*.jsonl"))
