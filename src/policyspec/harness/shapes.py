"""The shapes of the containers a caller hands a policy (spec/touch.md,
"Shapes of keys"; spec/evict.md, "Shape of `protected`").

A policy that accepts only the list the harness happens to build would pass
every check and fail in production, so each call gets one of the shapes
real callers pass. The shape is a function of the call itself, so a replay
and every trace shrunk from it pass the same shape; and a shape always
holds the keys in their order, so it never changes what a call says.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from types import GeneratorType
from typing import Any

__all__ = ["KEY_SHAPES", "SET_SHAPES", "keys_shape", "passed", "set_shape", "shape_of"]

KEY_SHAPES = ("list", "tuple", "generator", "set", "frozenset", "dict_keys")
"""Every shape ``touch`` and a hook's keys must accept, in the spec's order."""
SET_SHAPES = ("set", "frozenset")
"""Every shape ``protected`` and a finished request's key sets must accept."""

_SALT = {"touch": 1, "on_store_miss": 2, "on_request_access": 3, "evict": 4,
         "insertion_only": 5, "reused": 6, "hook": 7}


_ORDERED = KEY_SHAPES[:3]
_DISTINCT = (*_ORDERED, "dict_keys")


def keys_shape(op: str, keys: Sequence[int]) -> str:
    """The shape of the keys of this call of ``op``: one that holds them in
    their order (spec/touch.md, "Shapes of keys")."""
    shapes: tuple[str, ...]
    if len(keys) <= 1:
        shapes = KEY_SHAPES
    elif len(set(keys)) == len(keys):
        shapes = _DISTINCT
    else:
        shapes = _ORDERED
    return shapes[hash((_SALT[op], *keys)) % len(shapes)]


def set_shape(op: str, keys: Iterable[int]) -> str:
    """The shape of a set of keys of this call (``evict``'s protected)."""
    return SET_SHAPES[hash((_SALT[op], frozenset(keys))) % len(SET_SHAPES)]


def passed(shape: str, reals: list[Hashable]) -> Any:
    """The container of ``shape`` holding ``reals`` (a generator iterates
    over its own copy, once)."""
    if shape == "list":
        return reals
    if shape == "tuple":
        return tuple(reals)
    if shape == "generator":
        return (key for key in list(reals))
    if shape == "set":
        return set(reals)
    if shape == "frozenset":
        return frozenset(reals)
    if shape == "dict_keys":
        return dict.fromkeys(reals).keys()
    raise ValueError(f"unknown shape {shape!r}")


_DICT_KEYS: type = type({}.keys())


def shape_of(given: object) -> str:
    """The shape of a container ``passed`` made (the inverse of ``passed``):
    what a runner sends with the keys so that a policy in another process
    gets the same shape (spec/protocol.md, ``shape``). Anything else is a
    ``list``."""
    if isinstance(given, GeneratorType):
        return "generator"
    if isinstance(given, _DICT_KEYS):
        return "dict_keys"
    for shape, kind in (("list", list), ("tuple", tuple), ("set", set),
                        ("frozenset", frozenset)):
        if type(given) is kind:
            return shape
    return "list"
