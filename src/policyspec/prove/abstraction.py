"""Hand-written abstraction pairs: how a policy's internal state maps to the
model's, for ``prove --abstraction`` (spec/prove.md, "Hand-written pairs").
A pair reaches a pre-state directly, where the derived pair
(policyspec.prove.derived) can only build one through the policy's own
calls. The reference LRU's pair is registered here, so a subclass that
keeps its two structures inherits it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from policyspec.model.state import State

__all__ = [
    "MODULE_ATTRIBUTE",
    "Abstraction",
    "abstraction_from",
    "find_abstraction",
    "load_abstraction",
    "register_abstraction",
]

MODULE_ATTRIBUTE = "POLICYSPEC_ABSTRACTION"
"""A policy module may define this as ``(to_model, from_model)``, or as a
dict from class name to such a pair when it holds several policies."""

ToModel = Callable[[Any], State]
FromModel = Callable[[Any, State, Mapping[int, Any]], None]


@dataclass(frozen=True)
class Abstraction:
    """An abstraction function and its inverse (spec/prove.md, "Hand-written pairs")."""

    to_model: ToModel
    from_model: FromModel
    origin: str = ""
    """Where it was found, for the report."""


_REGISTRY: dict[type, Abstraction] = {}
_BUILTINS_LOADED = False


def register_abstraction(cls: type, to_model: ToModel, from_model: FromModel) -> Abstraction:
    """Register the pair for ``cls`` (and for subclasses that register none
    of their own). Returns the registered ``Abstraction``."""
    pair = Abstraction(to_model, from_model, f"registered for {_name(cls)}")
    _REGISTRY[cls] = pair
    return pair


def abstraction_from(value: object, origin: str, cls: type | None = None) -> Abstraction:
    """An ``Abstraction`` from what a module holds: an Abstraction, a
    ``(to_model, from_model)`` pair, or a dict from class name to either.
    ValueError names what is wrong."""
    if isinstance(value, Mapping):
        if cls is None or cls.__name__ not in value:
            known = ", ".join(sorted(str(k) for k in value))
            wanted = cls.__name__ if cls else "?"
            raise ValueError(f"{origin} has no entry for {wanted} (entries: {known})")
        return abstraction_from(value[cls.__name__], f"{origin}[{cls.__name__!r}]")
    if isinstance(value, Abstraction):
        return Abstraction(value.to_model, value.from_model, value.origin or origin)
    if isinstance(value, tuple | list) and len(value) == 2 and all(map(callable, value)):
        return Abstraction(value[0], value[1], origin)
    raise ValueError(f"{origin} must be (to_model, from_model), got {value!r}")


def find_abstraction(cls: type, module_names: tuple[str, ...] = ()) -> Abstraction | None:
    """The pair for ``cls``: a ``POLICYSPEC_ABSTRACTION`` in one of
    ``module_names`` (the target's module first) or in ``cls``'s module,
    else the registration of the nearest class in its MRO; None if none."""
    import sys

    for name in (*module_names, cls.__module__):
        module = sys.modules.get(name)
        value = getattr(module, MODULE_ATTRIBUTE, None) if module is not None else None
        if value is not None:
            if isinstance(value, Mapping) and cls.__name__ not in value:
                continue
            return abstraction_from(value, f"{name}.{MODULE_ATTRIBUTE}", cls)
    _load_builtins()
    for base in cls.__mro__:
        pair = _REGISTRY.get(base)
        if pair is not None:
            how = "" if base is cls else f" (inherited by {_name(cls)})"
            return Abstraction(pair.to_model, pair.from_model, pair.origin + how)
    return None


def load_abstraction(spec: str, cls: type | None = None) -> Abstraction:
    """The pair named by ``module:NAME`` (``--abstraction``). ValueError
    (one line) when it cannot be imported or is not a pair."""
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"--abstraction expects module:NAME, got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"--abstraction {spec}: cannot import {module_name}: {exc}") from None
    if not hasattr(module, attr):
        raise ValueError(f"--abstraction {spec}: {module_name} has no {attr}")
    return abstraction_from(getattr(module, attr), spec, cls)


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _load_builtins() -> None:
    global _BUILTINS_LOADED
    if _BUILTINS_LOADED:
        return
    _BUILTINS_LOADED = True
    from policyspec.reference import lru_abstraction
    from policyspec.reference.lru import LRUCachePolicy

    register_abstraction(LRUCachePolicy, lru_abstraction.to_model, lru_abstraction.from_model)
