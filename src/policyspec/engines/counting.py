"""Counting how often a policy looks at its entries: reads of a block's
``ref_cnt``, hashes of its keys and comparisons of keys. The engines that
bound a policy's work count these instead of reading a clock: a count is
the same on every machine and under any load. Blocks and keys are counted
through subclasses of the policy's own types, so the policy sees the types
it expects.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from policyspec.subject import Subject, offload_key

__all__ = ["Counter", "CountingKey", "counted", "counting_blocks", "counting_key"]

_LOOKS = [0]
"""Looks so far, by every counting block and key of this process."""


class Counter:
    """The looks made since the counter was made."""

    def __init__(self) -> None:
        self.since = _LOOKS[0]

    @property
    def looks(self) -> int:
        return _LOOKS[0] - self.since


class CountingKey(bytes):
    """An OffloadKey-format key that counts its hashes and comparisons."""

    __slots__ = ()

    def __hash__(self) -> int:
        _LOOKS[0] += 1
        return bytes.__hash__(self)

    def __eq__(self, other: object) -> bool:
        _LOOKS[0] += 1
        return bytes.__eq__(self, other)


def counting_key(index: int) -> Hashable:
    """``offload_key(index)`` as a ``CountingKey``."""
    return CountingKey(offload_key(index))


_COUNTING: dict[type, type | None] = {}


def _counting_class(cls: type, sample: object) -> type | None:
    """``cls`` with ``ref_cnt`` reads counted, adding no storage (None: its
    ``ref_cnt`` is neither a data descriptor, such as a ctypes field, a
    slot or a property, nor an entry of ``sample``'s ``__dict__``)."""
    if cls in _COUNTING:
        return _COUNTING[cls]
    field = next((klass.__dict__["ref_cnt"] for klass in cls.__mro__
                  if "ref_cnt" in klass.__dict__), None)
    read: Callable[[Any], Any] | None = None
    write: Callable[[Any, Any], None] | None = None
    if field is not None and hasattr(field, "__get__") and hasattr(field, "__set__"):
        get, put = field.__get__, field.__set__

        def read(self: Any) -> Any:
            _LOOKS[0] += 1
            return get(self, cls)

        def write(self: Any, value: Any) -> None:
            put(self, value)
    elif field is None and "ref_cnt" in getattr(sample, "__dict__", ()):

        def read(self: Any) -> Any:
            _LOOKS[0] += 1
            return self.__dict__["ref_cnt"]

        def write(self: Any, value: Any) -> None:
            self.__dict__["ref_cnt"] = value
    found = None if read is None else type(cls.__name__, (cls,), {
        "__slots__": (), "ref_cnt": property(read, write), "__module__": cls.__module__,
        "__qualname__": cls.__qualname__})
    _COUNTING[cls] = found
    return found


def counting_blocks(make_block: Callable[[int, int], Any]
                     ) -> Callable[[int, int], Any] | None:
    """``make_block`` whose blocks count their ``ref_cnt`` reads, or None
    when its blocks cannot be switched to a counting class."""
    sample = make_block(0, 0)
    counting = _counting_class(type(sample), sample)
    if counting is None:
        return None
    try:
        sample.__class__ = counting
        if sample.ref_cnt != 0:
            return None
    except TypeError:
        return None

    def make(ref_cnt: int, block_id: int) -> Any:
        block = make_block(ref_cnt, block_id)
        block.__class__ = counting
        return block

    return make


def counted(subject: Subject) -> tuple[Callable[[int, int], Any], Callable[[int], Hashable]] | str:
    """The block and key factories that count ``subject``'s looks, or why
    its looks cannot be counted: a policy in another process (its reads
    are that process's), keys not in OffloadKey format, or blocks whose
    ``ref_cnt`` no subclass can count."""
    if subject.in_child:
        return "the policy runs in another process, whose reads cannot be counted here"
    if subject.make_key is not offload_key:
        return "its keys are not policyspec's OffloadKey bytes, whose hashes are counted"
    blocks = counting_blocks(subject.make_block)
    if blocks is None:
        return "its blocks' ref_cnt cannot be counted (no attribute a subclass can wrap)"
    return blocks, counting_key
