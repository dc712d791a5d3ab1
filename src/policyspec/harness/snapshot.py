"""Cheap deep copies of a harness, for engines that branch (exhaustive).

``copy.deepcopy`` is generic and slow on the small dict/list/OrderedDict
structures policies are made of; ``clone`` copies those directly and hands
everything else to ``copy.deepcopy`` with the same memo, so the result is
what ``deepcopy`` would give (shared references stay shared, cycles work).
``fork`` copies a ``Lockstep`` so that the copy and the original can be
driven apart.
"""

from __future__ import annotations

import copy
from collections import Counter, OrderedDict, deque
from typing import Any

from policyspec.harness import Lockstep
from policyspec.subject import Block

__all__ = ["clone", "fork"]

_ATOMIC = frozenset({int, str, bytes, float, bool, type(None), complex, range, type})


_HOOKS = ("__reduce_ex__", "__reduce__", "__getstate__", "__setstate__", "__deepcopy__",
          "__new__")


def _plain_instance(cls: type) -> bool:
    """deepcopy would copy an instance of ``cls`` as a new object plus a
    copied ``__dict__``: no class above it defines a copy hook or slots."""
    mro = cls.__mro__[:-1]
    if any(any(hook in vars(k) for hook in _HOOKS) or vars(k).get("__slots__") for k in mro):
        return False
    return any("__dict__" in vars(k) for k in mro)


_PLAIN: dict[type, bool] = {}


def clone(x: Any, memo: dict[int, Any]) -> Any:
    """A deep copy of ``x``; ``memo`` maps ids of originals to their copies
    (seed it to share or substitute objects)."""
    cls = type(x)
    if cls in _ATOMIC:
        return x
    done = memo.get(id(x))
    if done is not None:
        return done
    if cls is dict or cls is OrderedDict:
        new_map: dict[Any, Any] = cls()
        memo[id(x)] = new_map
        for key, value in x.items():
            new_map[clone(key, memo)] = clone(value, memo)
        return new_map
    if cls is list:
        new_list: list[Any] = []
        memo[id(x)] = new_list
        new_list.extend(clone(item, memo) for item in x)
        return new_list
    if cls is tuple or cls is frozenset:
        items = [clone(item, memo) for item in x]
        if all(a is b for a, b in zip(items, x, strict=True)):
            return x
        return cls(items)
    if cls is set:
        new_set: set[Any] = set()
        memo[id(x)] = new_set
        new_set.update(clone(item, memo) for item in x)
        return new_set
    if cls is deque:
        new_deque: deque[Any] = deque(maxlen=x.maxlen)
        memo[id(x)] = new_deque
        new_deque.extend(clone(item, memo) for item in x)
        return new_deque
    if cls is Block:
        block = Block(x.ref_cnt, x.block_id)
        memo[id(x)] = block
        return block
    plain = _PLAIN.get(cls)
    if plain is None:
        plain = _PLAIN[cls] = _plain_instance(cls)
    if plain:
        obj = object.__new__(cls)
        memo[id(x)] = obj
        obj.__dict__.update(clone(x.__dict__, memo))
        return obj
    return copy.deepcopy(x, memo)


# Harness attributes a fork may share (set once at construction, or tables
# every branch agrees on) and those it must copy. A harness with an attribute
# in neither set is deep-copied whole: slower, still right.
_SHARED = frozenset({
    "subject", "profile", "capacity", "observe", "fatal", "has_mark", "in_child",
    "has_clear", "allocator", "keys", "_next_block_id", "calls",
    "model",  # immutable: every step makes a new one
    "threads", "_actions",
    "sightings", "muted",
})
_COPIED = frozenset({
    "policy", "blocks", "_given", "last_evict", "written", "inserted_at", "known", "trace",
    "soft", "checked", "contexts", "environment",
})


def fork(h: Lockstep) -> Lockstep:
    """An independent copy of ``h``: the policy and its blocks (copied
    together, so the policy's references to blocks and argument containers
    land on the copies), the model state and the harness's bookkeeping. The
    copy starts with empty ``checked`` counts."""
    if set(vars(h)) - _SHARED - _COPIED:
        shared = [getattr(h, name) for name in _SHARED if hasattr(h, name)]
        memo: dict[int, Any] = {id(x): x for x in shared}
        return copy.deepcopy(h, memo)
    new = copy.copy(h)
    new.policy, new.blocks, new._given, new.last_evict, new.contexts, new.environment = clone(
        (h.policy, h.blocks, h._given, h.last_evict, h.contexts, h.environment), {}
    )
    new.written = dict(h.written)
    new.inserted_at = dict(h.inserted_at)
    new.known = set(h.known)
    new.trace = list(h.trace)
    new.soft = list(h.soft)
    new.checked = Counter()
    return new
