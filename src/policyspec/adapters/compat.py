"""Names of newer Pythons that policy files use, provided while they load.

Upstream vLLM files run on Python 3.12+ and may decorate methods with
``typing.override`` (PEP 698, new in 3.12). The decorator only marks a
method for type checkers (it sets ``__override__ = True`` and returns the
method), so a policy behaves the same with or without it; on 3.11 a
missing ``typing.override`` would stop the check before anything ran. While
a target is imported, ``provided()`` puts a decorator with 3.12's runtime
behaviour in ``typing`` when it is missing, and takes it out afterwards.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = ["Provided", "provided"]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class Provided:
    """What the policy used of the names provided for it."""

    used: list[str] = field(default_factory=list)


@contextmanager
def provided() -> Iterator[Provided]:
    record = Provided()
    if hasattr(typing, "override"):
        yield record
        return

    def override(method: F) -> F:
        if "typing.override" not in record.used:
            record.used.append("typing.override")
        with suppress(AttributeError, TypeError):  # as 3.12 does for odd objects
            method.__override__ = True  # type: ignore[attr-defined]
        return method

    typing.override = override  # type: ignore[attr-defined]
    try:
        yield record
    finally:
        del typing.override  # type: ignore[attr-defined]
