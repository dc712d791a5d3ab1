"""The pieces of record text the guard writes (spec/history.md, "Records"):
key and request ids kept as their decimal text, and small numbers as
cached text, so that writing a record costs a few lookups and one string.

Turning an int into text costs as much as the rest of a record; the ids a
history uses are few at a time and the numbers (``ref_cnt``, chunk ids,
positions, generations) small, so each is formatted once.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CLOSED", "NUMBERS", "Numbers", "TextIds"]

_CACHED = 1 << 16
"""Numbers kept as text at most (the rest are formatted each time)."""


class TextIds(dict[Any, str]):
    """Object -> its id as decimal text; an object seen for the first time
    gets the next number (``ids[key]`` never fails). Numbers are never
    reused, also after ``forget``."""

    __slots__ = ("next",)

    def __init__(self) -> None:
        super().__init__()
        self.next = 0

    def __missing__(self, key: Any) -> str:
        text = self[key] = str(self.next)
        self.next += 1
        return text

    def forget(self, keep: Any) -> int:
        """Drop the ids of the objects not in ``keep`` (in place: bound
        lookups stay valid); how many were dropped."""
        dropped = [key for key in self if key not in keep]
        for key in dropped:
            del self[key]
        return len(dropped)

    def oldest(self, count: int) -> None:
        """Drop the ``count`` ids given first."""
        for key in list(self)[:count]:
            del self[key]


class Numbers(dict[Any, str]):
    """Number -> its record text (``NUMBERS[n]``), followed by ``suffix``,
    formatted on first use and kept when it is an int (anything else is
    written as its ``repr``, as a list's ``repr`` would have it)."""

    __slots__ = ("suffix",)

    def __init__(self, suffix: str = "") -> None:
        super().__init__()
        self.suffix = suffix

    def __missing__(self, value: Any) -> str:
        if value.__class__ is not int:
            return repr(value) + self.suffix
        text = str(value) + self.suffix
        if len(self) < _CACHED:
            self[value] = text
        return text


NUMBERS = Numbers()
"""The one cache of number texts (shared: numbers mean nothing per guard)."""
CLOSED = Numbers("]")
"""Number texts that end a record (``ref_cnt``, last of most records)."""
