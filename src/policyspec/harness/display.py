"""How keys are written for a reader, in failure messages and in traces.

A fault that shows only at a size names a thousand protected keys or a
touch of 257; written out, one step of a trace or one message fills a
screen. Long collections are written with runs as ranges and their length,
so that a step stays a line and a message a sentence.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["LONG_KEYS", "keys_text", "set_text"]

LONG_KEYS = 16
"""Longer collections are written with runs of keys as ranges, and their length."""


def keys_text(keys: Iterable[int]) -> str:
    """Keys in their order as a list display (``[3, 1, 2]``); a long one
    with runs of four or more keys counting up as ``a..b`` and its length
    (``[1, 3809..3848] (41 keys)``)."""
    shown = list(keys)
    return _bracketed("[", _parts(shown), "]", len(shown))


def set_text(keys: Iterable[int]) -> str:
    """Keys as a set display, sorted (``{0, 3}``; ``set()`` when empty, as
    Python prints it); a long one as ``keys_text`` does."""
    shown = sorted(keys)
    return _bracketed("{", _parts(shown), "}", len(shown)) if shown else "set()"


def _bracketed(opening: str, parts: list[str], closing: str, count: int) -> str:
    text = opening + ", ".join(parts) + closing
    return text if count <= LONG_KEYS else f"{text} ({count:,} keys)"


def _parts(keys: list[int]) -> list[str]:
    if len(keys) <= LONG_KEYS:
        return [str(k) for k in keys]
    parts: list[str] = []
    i = 0
    while i < len(keys):
        j = i
        while j + 1 < len(keys) and keys[j + 1] == keys[j] + 1:
            j += 1
        if j - i >= 3:
            parts.append(f"{keys[i]}..{keys[j]}")
        else:
            parts += [str(k) for k in keys[i:j + 1]]
        i = j + 1
    return parts
