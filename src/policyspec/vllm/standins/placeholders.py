"""Inert placeholders for the ``vllm.*`` names the stand-ins do not model
(spec/placeholders.md). Real policy files import more of vLLM than they
need, so such names are inert while the file is imported; once the load is
over they are armed, and a policy that really uses one fails with a message
naming it. A name kept with ``--placeholder NAME`` stays inert for the
whole check, and the report says the verdict holds with it.
"""

from __future__ import annotations

import types
from abc import ABCMeta
from collections.abc import Callable, Iterable
from typing import Any

__all__ = [
    "LoadRecord",
    "PlaceholderUsedError",
    "StandinModule",
    "is_placeholder",
    "keeps",
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


def keeps(kept: str, name: str) -> bool:
    """True when the user's ``--placeholder kept`` covers the placeholder
    ``name`` (a qualified name, maybe with ``.attr`` or ``(...)`` after): a
    dotted ``kept`` is that name or a prefix of it; a plain one is any
    component of it (``PolicyStats`` covers
    ``vllm.v1.kv_offload.cpu.policies.abstract.PolicyStats(...).hits``)."""
    if "." in kept:
        return name == kept or name.startswith((kept + ".", kept + "("))
    return kept in name.replace("(...)", "").split(".")


class LoadRecord:
    """What one load installed: the placeholders handed out (by qualified
    name, in order), whether they are armed yet, and the names the user
    keeps inert for the whole check (``--placeholder``)."""

    def __init__(self, kept: Iterable[str] = ()) -> None:
        self.names: list[str] = []
        self.armed = False
        self.kept = tuple(kept)

    def note(self, name: str) -> None:
        if name not in self.names:
            self.names.append(name)

    def arm(self) -> None:
        self.armed = True

    def inert(self, name: str) -> bool:
        """Using the placeholder ``name`` does nothing (else it raises)."""
        return not self.armed or any(keeps(k, name) for k in self.kept)

    def kept_names(self) -> list[str]:
        """The placeholders handed out so far that stay inert when armed."""
        return [n for n in self.names if any(keeps(k, n) for k in self.kept)]


_NAME = "_policyspec_placeholder"
_RECORD = "_policyspec_record"
_RESULT = "_policyspec_result"


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


def _inert(cls: type) -> type:
    """``cls`` when using it does nothing now; PlaceholderUsedError naming
    it when it is armed and not kept; TypeError for a real subclass."""
    own = _own(cls)
    if own is None:
        raise TypeError(f"{cls.__name__} does not support this operation")
    if not own[1].inert(own[0]):
        raise PlaceholderUsedError(own[0])
    return cls


def _gives(value: Any) -> Callable[..., Any]:
    """A metaclass operation that gives ``value`` (None: the placeholder)."""

    def operation(cls: type, *args: Any) -> Any:
        placeholder = _inert(cls)
        return placeholder if value is None else value

    return operation


class _PlaceholderMeta(ABCMeta):
    # Derived from ABCMeta so that a class may mix a placeholder with the
    # stand-in CachePolicy (an ABC) without a metaclass conflict.

    def __getattr__(cls, attr: str) -> Any:
        own = _own(cls)
        if own is None or attr.startswith("__"):
            raise AttributeError(attr)
        name, record = own
        if not record.inert(f"{name}.{attr}"):
            raise PlaceholderUsedError(f"{name}.{attr}")
        value = make_placeholder(f"{name}.{attr}", record, noted=False)
        setattr(cls, attr, value)
        return value

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        own = _own(cls)
        if own is None:  # a real class deriving from a placeholder
            return super().__call__(*args, **kwargs)
        name, record = own
        if not record.inert(name):
            raise PlaceholderUsedError(name)
        if len(args) == 1 and not kwargs and isinstance(args[0], type | types.FunctionType):
            return args[0]  # used as a decorator: leave the decorated object alone
        made = cls.__dict__.get(_RESULT)
        if made is None:  # one result per placeholder: calls in a hot path stay cheap
            made = make_placeholder(f"{name}(...)", record, noted=False)
            setattr(cls, _RESULT, made)
        return made

    def __getitem__(cls, item: Any) -> Any:
        return _inert(cls)

    def __setitem__(cls, item: Any, value: Any) -> None:
        if _own(cls) is not None:
            _inert(cls)

    def __delitem__(cls, item: Any) -> None:
        _inert(cls)

    def __iter__(cls) -> Any:
        if _own(cls) is not None:
            _inert(cls)
        return iter(())

    # What a counter object is used for: arithmetic gives the placeholder
    # back, orderings are false, lengths and numbers 0, ``with`` does nothing.
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _gives(None)
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = _gives(None)
    __neg__ = __pos__ = __abs__ = __enter__ = _gives(None)
    __lt__ = __le__ = __gt__ = __ge__ = __contains__ = _gives(False)
    __len__ = __int__ = __index__ = _gives(0)
    __float__ = _gives(0.0)

    def __exit__(cls, *exc: object) -> None:
        _inert(cls)


class _Placeholder(metaclass=_PlaceholderMeta):
    """Base of every placeholder class; real subclasses may call its
    ``__init__`` while loading, not while being checked."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        found = _nearest(type(self))
        if found is not None and not found[1].inert(found[0]):
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
        if not record.inert(full):
            raise PlaceholderUsedError(full)
        value = make_placeholder(full, record)
        setattr(self, attr, value)
        return value
