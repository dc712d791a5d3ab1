"""Serving traces, read as a stream: one request per line, never the whole
file in memory, so a trace of any length can be played (spec/traffic.md,
"Trace formats"). A line that breaks the format stops the reading with
``TraceFormatError``, one line naming the file, the line and the problem.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from policyspec.vllm.standins.keys import make_offload_key

__all__ = [
    "BLOCK_TOKENS",
    "TraceFormatError",
    "TraceRequest",
    "block_key",
    "read_trace",
    "validate_trace",
]

BLOCK_TOKENS = 512
"""Tokens per block: Mooncake hashes 512-token blocks. One block is one
offloaded chunk (one key of vLLM's manager)."""

_MAX_ID = (1 << 64) - 1


class TraceFormatError(ValueError):
    """A line of a trace that is not a request of either format."""

    def __init__(self, path: str, line: int, problem: str) -> None:
        super().__init__(f"{path}, line {line}: {problem}")
        self.path = path
        self.line = line
        self.problem = problem


@dataclass(frozen=True, slots=True)
class TraceRequest:
    """One request of a trace."""

    line: int
    """Its line in the file (1-based)."""
    arrival_ms: float
    input_tokens: int
    output_tokens: int
    blocks: tuple[int | str, ...]
    """Its prefix blocks, head to tail, by the trace's ids."""


_GROUP_0 = make_offload_key(b"", 0)
"""The KV-cache group part of a key of group 0."""


def block_key(block: int | str) -> bytes:
    """The manager's key of a trace block (KV-cache group 0, vLLM's
    ``make_offload_key`` layout): a whole number as 8 big-endian bytes, a
    string as a 16-byte BLAKE2b digest."""
    if block.__class__ is int:
        return block.to_bytes(8, "big") + _GROUP_0
    digest = hashlib.blake2b(str(block).encode("utf-8"), digest_size=16).digest()
    return digest + _GROUP_0


def _open(path: Path) -> io.BufferedIOBase:
    if path.suffix == ".gz":
        return gzip.GzipFile(path, "rb")
    return open(path, "rb")


def read_trace(path: str | Path) -> Iterator[TraceRequest]:
    """The requests of the trace at ``path``, one at a time (spec/traffic.md, "Trace formats").
    Raises ``TraceFormatError`` at the first bad line, ``OSError`` when the
    file cannot be read."""
    shown = str(path)
    previous = -math.inf
    with _open(Path(path)) as stream:
        for number, raw in enumerate(stream, 1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise TraceFormatError(shown, number, "not UTF-8 text") from None
            if not text.strip():
                continue
            request = _request(shown, number, text)
            if request.arrival_ms < previous:
                raise TraceFormatError(
                    shown, number, f"arrives at {request.arrival_ms:g} ms, before the line "
                    f"above ({previous:g} ms): a trace lists requests in arrival order")
            previous = request.arrival_ms
            yield request


def validate_trace(path: str | Path) -> tuple[int, int]:
    """Read the whole trace once (in constant memory) and return its
    requests and blocks; raises as ``read_trace``. Front ends call it
    before they start, so that a bad line stops them before anything is
    written."""
    requests = blocks = 0
    for request in read_trace(path):
        requests += 1
        blocks += len(request.blocks)
    return requests, blocks


def _request(path: str, line: int, text: str) -> TraceRequest:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceFormatError(path, line, f"not JSON ({exc.msg} at column {exc.colno})"
                               ) from None
    if not isinstance(value, dict):
        raise TraceFormatError(path, line, f"a JSON {_kind(value)}, not an object")
    if "hash_ids" in value:
        return _mooncake(path, line, value)
    if "blocks" in value:
        return _own(path, line, value)
    raise TraceFormatError(path, line, "neither a Mooncake request (hash_ids) nor a "
                           "policyspec one (blocks)")


def _mooncake(path: str, line: int, value: dict[str, Any]) -> TraceRequest:
    arrival = _number(path, line, value, "timestamp")
    input_tokens = _count(path, line, value, "input_length")
    output_tokens = _count(path, line, value, "output_length")
    blocks = _blocks(path, line, value, "hash_ids", strings=False)
    return TraceRequest(line, arrival, input_tokens, output_tokens, blocks)


def _own(path: str, line: int, value: dict[str, Any]) -> TraceRequest:
    arrival = _number(path, line, value, "time_ms")
    output_tokens = _count(path, line, value, "output_tokens") if "output_tokens" in value else 0
    blocks = _blocks(path, line, value, "blocks", strings=True)
    return TraceRequest(line, arrival, len(blocks) * BLOCK_TOKENS, output_tokens, blocks)


def _field(path: str, line: int, value: dict[str, Any], name: str) -> Any:
    if name not in value:
        raise TraceFormatError(path, line, f"no field {name!r}")
    return value[name]


def _number(path: str, line: int, value: dict[str, Any], name: str) -> float:
    found = _field(path, line, value, name)
    if isinstance(found, bool) or not isinstance(found, int | float) or not (
            math.isfinite(found) and found >= 0):
        raise TraceFormatError(path, line, f"{name} is {json.dumps(found)}; expected a number "
                               ">= 0 (milliseconds)")
    return float(found)


def _count(path: str, line: int, value: dict[str, Any], name: str) -> int:
    found = _field(path, line, value, name)
    if isinstance(found, bool) or not isinstance(found, int) or found < 0:
        raise TraceFormatError(path, line, f"{name} is {json.dumps(found)}; expected a whole "
                               "number >= 0 (tokens)")
    return found


def _blocks(
    path: str, line: int, value: dict[str, Any], name: str, *, strings: bool
) -> tuple[int | str, ...]:
    found = _field(path, line, value, name)
    if not isinstance(found, list):
        raise TraceFormatError(path, line, f"{name} is a {_kind(found)}; expected a list of "
                               "block ids")
    for index, block in enumerate(found):
        good = (not isinstance(block, bool) and isinstance(block, int) and 0 <= block <= _MAX_ID
                ) or (strings and isinstance(block, str))
        if not good:
            expected = "a whole number from 0 to 2**64 - 1" + (" or a string" if strings else "")
            raise TraceFormatError(path, line, f"{name}[{index}] is {json.dumps(block)}; "
                                   f"expected {expected}")
    blocks = tuple(found)
    seen: set[int | str] = set()
    for block in blocks:
        if block in seen:
            raise TraceFormatError(path, line, f"{name} names block {json.dumps(block)} twice; "
                                   "a request's blocks are distinct (each extends the prefix)")
        seen.add(block)
    return blocks


def _kind(value: object) -> str:
    return {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"
            }.get(type(value), "number")
