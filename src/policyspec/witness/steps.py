"""A trace as a reader sees it: numbered steps, with long runs told once.

A fault that shows only at a size needs hundreds of steps before the one
that fails, and printed one per line they bury the steps that matter. So a
run of steps that differ only in a key counting up (or in a permutation of
keys) is one line that keeps the steps' numbers ("3-514. for k = 0 to
255: insert key k ..."); the failing step is always printed on its own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["MIN_RUN", "numbered"]

MIN_RUN = 4
"""Fewer repeats than this are printed step by step."""

_KEY = re.compile(r"\bkey (\d+)\b")


Shape = tuple[str, int] | None
"""A step with its one key number written ``k``, and that number (None for
a step naming no key or several)."""


def numbered(trace: Sequence[str]) -> list[str]:
    """The lines ``"n. step"``, runs told once as ``"a-b. for k = x to y:
    ..."`` (``a`` and ``b`` the first and last step numbers of the run)."""
    shapes = [_shape(step) for step in trace]
    lines: list[str] = []
    i = 0
    last = len(trace) - 1  # the failing step stands alone
    while i < len(trace):
        run = _run(shapes, i, last)
        if run is None:
            alike = _alike(shapes, i, last)
            if len(alike) < 2:
                lines.append(f"{i + 1}. {trace[i]}")
                i += 1
                continue
            template = shapes[i]
            assert template is not None
            keys = ", ".join(map(str, alike))
            lines.append(f"{i + 1}-{i + len(alike)}. for k = {keys}: {template[0]}")
            i += len(alike)
            continue
        templates, key, repeats = run
        end = i + len(templates) * repeats
        lines.append(f"{i + 1}-{end}. for k = {key} to {key + repeats - 1}: "
                     + "; ".join(templates))
        i = end
    return lines


def _shape(step: str) -> Shape:
    found = _KEY.findall(step)
    if len(found) != 1:
        return None
    return _KEY.sub("key k", step), int(found[0])


def _alike(shapes: Sequence[Shape], start: int, last: int) -> list[int]:
    """The keys of the steps from ``start`` (before ``last``) that are the
    same step but for a key that differs from every other's."""
    first = shapes[start]
    if first is None or start >= last:
        return []
    keys = [first[1]]
    at = start + 1
    while at < last:
        shape = shapes[at]
        if shape is None or shape[0] != first[0] or shape[1] in keys:
            break
        keys.append(shape[1])
        at += 1
    return keys


def _block(shapes: Sequence[Shape], at: int, period: int) -> tuple[list[str], int] | None:
    """The templates and the one key of the ``period`` steps from ``at``, or
    None when they are not all steps on one same key."""
    block = shapes[at:at + period]
    if len(block) < period:
        return None
    templates, keys = [], set()
    for shape in block:
        if shape is None:
            return None
        templates.append(shape[0])
        keys.add(shape[1])
    return (templates, keys.pop()) if len(keys) == 1 else None


def _run(
    shapes: Sequence[Shape], start: int, last: int
) -> tuple[list[str], int, int] | None:
    """The longest run from ``start`` that ends before ``last``, as its
    block's templates, its first key and its repeats: blocks of one or two
    steps on one key, alike but for that key, which counts up by one. None
    for fewer than ``MIN_RUN`` repeats."""
    best: tuple[list[str], int, int] | None = None
    for period in (1, 2):
        first = _block(shapes, start, period)
        if first is None:
            continue
        templates, key = first
        repeats = 1
        while start + period * (repeats + 1) <= last:
            block = _block(shapes, start + period * repeats, period)
            if block is None or block != (templates, key + repeats):
                break
            repeats += 1
        covered = period * repeats
        if repeats >= MIN_RUN and (best is None or covered > len(best[0]) * best[2]):
            best = (templates, key, repeats)
    return best
