"""Inert placeholders for the ``vllm.*`` names the stand-ins do not model.

Real policy files often import more of vLLM than the policy needs (a spec
class to register themselves, the manager module). While the file is being
imported such names are inert: they can be subclassed, called, indexed and
have attributes read. Once the load is over the placeholders are *armed*:
using one while the policy is checked raises ``PlaceholderUsedError`` naming
it, so a policy that really depends on an unmodelled part of vLLM fails with
a message that says which part.
"""

from __future__ import annotations

import types
from abc import ABCMeta
from typing import Any

__all__ = [
    "LoadRecord",
    "PlaceholderUsedError",
    "StandinModule",
    "is_placeholder",
    "make_placeholder",
]


class PlaceholderUsedError(RuntimeError):
    """A placeholder for an unmodelled vLLM name was used during a check."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"{name} is an inert placeholder: the vLLM stand-ins do not model it "
            "(install vLLM to check a policy that uses it)"
        )
        self.name = name


class LoadRecord:
    """What one load installed: the placeholders handed out (by qualified
    name, in order) and whether they are armed yet."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.armed = False

    def note(self, name: str) -> None:
        if name not in self.names:
            self.names.append(name)

    def arm(self) -> None:
        self.armed = True


_NAME = "_policyspec_placeholder"
_RECORD = "_policyspec_record"


def _own(cls: type) -> tuple[str, LoadRecord] | None:
    """(name, record) when ``cls`` itself is a placeholder (not a subclass)."""
    name = cls.__dict__.get(_NAME)
    if name is None:
        return None
    record: LoadRecord = cls.__dict__[_RECORD]
    return name, record


def _nearest(cls: type) -> tuple[str, LoadRecord] | None:
    for klass in cls.__mro__:
        found = _own(klass)
        if found is not None:
            return found
    return None


class _PlaceholderMeta(ABCMeta):
    # Derived from ABCMeta so that a class may mix a placeholder with the
    # stand-in CachePolicy (an ABC) without a metaclass conflict.

    def __getattr__(cls, attr: str) -> Any:
        own = _own(cls)
        if own is None or attr.startswith("__"):
            raise AttributeError(attr)
        name, record = own
        if record.armed:
            raise PlaceholderUsedError(f"{name}.{attr}")
        value = make_placeholder(f"{name}.{attr}", record, noted=False)
        setattr(cls, attr, value)
        return value

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        own = _own(cls)
        if own is None:  # a real class deriving from a placeholder
            return super().__call__(*args, **kwargs)
        name, record = own
        if record.armed:
            raise PlaceholderUsedError(name)
        if len(args) == 1 and not kwargs and isinstance(args[0], type | types.FunctionType):
            return args[0]  # used as a decorator: leave the decorated object alone
        return make_placeholder(f"{name}(...)", record, noted=False)

    def __getitem__(cls, item: Any) -> Any:
        own = _own(cls)
        if own is None:
            raise TypeError(f"{cls.__name__} is not subscriptable")
        if own[1].armed:
            raise PlaceholderUsedError(own[0])
        return cls

    def __setitem__(cls, item: Any, value: Any) -> None:
        own = _own(cls)
        if own is not None and own[1].armed:
            raise PlaceholderUsedError(own[0])

    def __iter__(cls) -> Any:
        own = _own(cls)
        if own is not None and own[1].armed:
            raise PlaceholderUsedError(own[0])
        return iter(())


class _Placeholder(metaclass=_PlaceholderMeta):
    """Base of every placeholder class; real subclasses may call its
    ``__init__`` while loading, not while being checked."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        found = _nearest(type(self))
        if found is not None and found[1].armed:
            raise PlaceholderUsedError(found[0])


def make_placeholder(name: str, record: LoadRecord, *, noted: bool = True) -> type:
    """A fresh placeholder class standing for the vLLM name ``name``."""
    if noted:
        record.note(name)
    short = name.rsplit(".", 1)[-1].replace("(...)", "") or "placeholder"
    return _PlaceholderMeta(
        short,
        (_Placeholder,),
        {_NAME: name, _RECORD: record, "__module__": name.rpartition(".")[0] or name},
    )


def is_placeholder(obj: object) -> bool:
    """True for a placeholder class (not for a real class deriving from one)."""
    return isinstance(obj, type) and _own(obj) is not None


class StandinModule(types.ModuleType):
    """A stand-in ``vllm.*`` module. Names it does not define become
    placeholders (noted in the load record); names of stand-in submodules
    are imported, so ``from vllm.v1.kv_offload import base`` works."""

    _policyspec_record: LoadRecord
    _policyspec_children: frozenset[str]

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        full = f"{self.__name__}.{attr}"
        if attr in self._policyspec_children:
            import importlib

            return importlib.import_module(full)
        record = self._policyspec_record
        if record.armed:
            raise PlaceholderUsedError(full)
        value = make_placeholder(full, record)
        setattr(self, attr, value)
        return value
