"""The block and request objects handed to a policy, of the types its vLLM
uses: the ``BlockStatus`` / ``ChunkStatus`` class the policy module imported
(stand-in or real), else the one of its revision; vLLM's ``ReqContext``.

Chunk records get a ``block_id`` alias of ``chunk_id`` (a subclass, so
``isinstance`` still holds) because the harness reads ``block_id`` on every
block it owns.
"""

from __future__ import annotations

import ctypes
import importlib
import sys
from collections.abc import Callable
from typing import Any

from policyspec.vllm.standins import keys, policies, vllm_importable

__all__ = ["block_factory", "block_type", "policy_home", "req_context_class"]

_HOME = {
    "R-1": "vllm.v1.kv_offload.cpu_manager",
    "R0": "vllm.v1.kv_offload.cpu.policies.abstract",
}
_DEFAULT_HOME = "vllm.v1.kv_offload.cpu.policies.base"


def policy_home(api: str) -> str:
    """The vLLM module that defines ``CachePolicy`` (and its block type) at
    revision ``api``."""
    from policyspec.releases import find

    release = find(api)
    return release.policy_home if release is not None else _HOME.get(api, _DEFAULT_HOME)


def _is_status(obj: object, field: str) -> bool:
    if not (isinstance(obj, type) and issubclass(obj, ctypes.Structure)):
        return False
    fields = {f[0] for klass in obj.__mro__ for f in getattr(klass, "_fields_", ())}
    return {"ref_cnt", field} <= fields


def block_type(cls: type, api: str, kind: str) -> type:
    """The status class for blocks of ``cls``: ``kind`` is "block" or "chunk"."""
    name, field = ("ChunkStatus", "chunk_id") if kind == "chunk" else ("BlockStatus", "block_id")
    module = sys.modules.get(cls.__module__)
    found = getattr(module, name, None) if module is not None else None
    if _is_status(found, field):
        assert isinstance(found, type)
        return found
    if vllm_importable():
        try:
            real = getattr(importlib.import_module(policy_home(api)), name)
        except (ImportError, AttributeError):
            real = None
        if _is_status(real, field):
            assert isinstance(real, type)
            return real
    return policies.ChunkStatus if kind == "chunk" else policies.BlockStatus


def _chunk_id_get(self: Any) -> int:
    return int(self.chunk_id)


def _chunk_id_set(self: Any, value: int) -> None:
    self.chunk_id = value


def block_factory(status: type) -> Callable[[int, int], Any]:
    """``make_block(ref_cnt, block_id)`` building ``status`` records the way
    vLLM's manager does (construct with the id, then write ref_cnt)."""
    fields = {f[0] for klass in status.__mro__ for f in getattr(klass, "_fields_", ())}
    if "block_id" not in fields:
        status = type(
            status.__name__,
            (status,),
            {"block_id": property(_chunk_id_get, _chunk_id_set), "__module__": status.__module__},
        )
    try:
        status(0)
        takes_id = True
    except TypeError:
        takes_id = False

    if takes_id:
        def make_block(ref_cnt: int, block_id: int) -> Any:
            block = status(block_id)
            block.ref_cnt = ref_cnt
            return block
    else:
        def make_block(ref_cnt: int, block_id: int) -> Any:
            block = status()
            block.ref_cnt = ref_cnt
            block.block_id = block_id
            return block

    return make_block


def req_context_class() -> type:
    """vLLM's ``ReqContext`` when vLLM is installed, else the stand-in."""
    if vllm_importable():
        try:
            real = importlib.import_module("vllm.v1.kv_offload.base").ReqContext
            if isinstance(real, type):
                return real
        except (ImportError, AttributeError):
            pass
    return keys.ReqContext
