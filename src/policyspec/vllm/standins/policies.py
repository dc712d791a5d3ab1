"""Stand-in contents of ``vllm.v1.kv_offload.cpu.policies.base`` (and of the
older homes of ``CachePolicy``: ``...policies.abstract``, R0, and
``vllm.v1.kv_offload.cpu_manager``, R-1), so that a policy file imports
without vLLM. ``CachePolicy`` is one permissive base class for every
revision (spec/contract.md): a subclass written for any of them can be
built, and its revision is read from the methods it defines itself
(``policyspec.adapters.revisions``), never from these defaults.
"""

from __future__ import annotations

import ctypes
import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from typing import Any

__all__ = [
    "DEFAULT_MARK",
    "STANDIN_MARK",
    "BlockStatus",
    "CachePolicy",
    "ChunkStatus",
    "cache_policy_for",
    "order_request_keys",
]

STANDIN_MARK = "_policyspec_standin"
"""Class attribute naming the vLLM module a stand-in class stands for."""

DEFAULT_MARK = "_policyspec_default"
"""Function attribute of a stand-in in-tree policy's method that only does
what the base class does by default (``intree``): not the policy's own."""

_BASE_HOME = "vllm.v1.kv_offload.cpu.policies.base"


class BlockStatus(ctypes.Structure):
    """Status of one offloaded block: ``ref_cnt`` is -1 while the store is in
    flight, 0 when idle, and the number of running loads otherwise."""

    _fields_ = [("ref_cnt", ctypes.c_int32), ("block_id", ctypes.c_int64)]
    _policyspec_standin = _BASE_HOME

    def __init__(self, block_id: int) -> None:
        super().__init__()
        self.ref_cnt = -1
        self.block_id = block_id

    @property
    def is_ready(self) -> bool:
        return bool(self.ref_cnt >= 0)


class ChunkStatus(ctypes.Structure):
    """R7's name for the same record, with ``chunk_id`` for ``block_id``."""

    _fields_ = [("ref_cnt", ctypes.c_int32), ("chunk_id", ctypes.c_int64)]
    _policyspec_standin = _BASE_HOME

    def __init__(self, chunk_id: int) -> None:
        super().__init__()
        self.ref_cnt = -1
        self.chunk_id = chunk_id

    @property
    def is_ready(self) -> bool:
        return bool(self.ref_cnt >= 0)


class CachePolicy(ABC):
    """vLLM's policy ABC, as one superset of its revisions (spec/contract.md)."""

    _policyspec_standin = _BASE_HOME

    def __init__(self, cache_capacity: int, **kwargs: Any) -> None:
        self.cache_capacity = cache_capacity

    @abstractmethod
    def get(self, key: Any) -> Any: ...

    @abstractmethod
    def insert(self, key: Any, block: Any, *args: Any, **kwargs: Any) -> None: ...

    @abstractmethod
    def remove(self, key: Any) -> None: ...

    # R-1 to R9; gone in R10 (spec/contract.md).
    def touch(self, keys: Iterable[Any], *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(
            "touch is abstract up to vLLM 0.33.0 and gone from 0.34.0: this policy has none")

    def _touches(self) -> bool:
        """Whether the class defines ``touch`` itself (the stand-in's is not one)."""
        return type(self).touch is not CachePolicy.touch

    @abstractmethod
    def evict(self, n: int, protected: Any, *args: Any, **kwargs: Any) -> Any: ...

    # R3: eligibility notifications, no-ops by default.
    def mark_evictable(self, key: Any) -> None:
        return None

    def mark_non_evictable(self, key: Any) -> None:
        return None

    # R7: variable-size eviction, only where the policy supports it.
    def evict_until(self, can_fit: Callable[[list[Any]], bool], protected: Any) -> Any:
        raise NotImplementedError("this policy does not implement evict_until")

    # R6: session hooks, no-ops by default.
    def record_lookup(self, key: Any, req_context: Any) -> None:
        return None

    def open_session(self, *args: Any) -> None:
        return None

    def close_session(self) -> None:
        return None

    # R8: request-scoped recency; R6 and forks: a no-op with one argument.
    # Up to R9 the default touches; R10's does nothing (spec/contract.md).
    def on_store_miss(self, keys: Iterable[Any], req_context: Any) -> None:
        if self._touches():
            self.touch(keys, req_context)

    # R9 (vLLM 0.33.0): first accesses of a request, a no-op by default; the
    # keyword arguments admit the ztysth fork's ``inserted``.
    def on_request_access(self, keys: Iterable[Any], req_context: Any, **kwargs: Any) -> None:
        return None

    def on_request_finished(self, *args: Any, **kwargs: Any) -> None:
        # R8 / R9: (key_groups, insertion_only_keys, reused_keys, req_context),
        # by position or by name: one touch per group. R6: (req_context), a
        # no-op. R10 declares it abstract (its body does nothing).
        if len(args) + len(kwargs) != 4 or not self._touches():
            return None
        bound = _FINISHED.bind(*args, **kwargs).arguments
        for keys in bound["key_groups"]:
            self.touch(keys, bound["req_context"])


def _finished_shape(
    key_groups: Any, insertion_only_keys: Any, reused_keys: Any, req_context: Any
) -> None:
    """R9's on_request_finished parameters (a signature to bind to)."""


_FINISHED = inspect.signature(_finished_shape)


def order_request_keys(key_groups: Sequence[Sequence[Any]], req_context: Any) -> list[Any]:
    """R8 helper: a request's keys of every group as one list, ordered
    head-to-tail by their recorded end-token positions when all are known."""
    keys = [key for group in key_groups for key in group]
    positions = {}
    for key in keys:
        position = req_context.get_offload_key_position(key)
        if position is not None:
            positions[key] = position
    if len(positions) == len(keys):
        keys.sort(key=positions.__getitem__)
    return keys


_VARIANTS: dict[str, type] = {_BASE_HOME: CachePolicy}


def cache_policy_for(home: str) -> type:
    """The stand-in ``CachePolicy`` as imported from module ``home``; each
    home gets its own subclass so that detection can tell R0 and R-1 files
    (which import it from older modules) from later ones."""
    variant = _VARIANTS.get(home)
    if variant is None:
        variant = type(
            "CachePolicy",
            (CachePolicy,),
            {STANDIN_MARK: home, "__module__": __name__, "__doc__": CachePolicy.__doc__},
        )
        _VARIANTS[home] = variant
    return variant
