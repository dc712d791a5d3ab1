"""vLLM stand-in modules: what policy files import, without installing vLLM
(spec/check.md, "Which vLLM"). ``installed()`` answers every ``vllm.*``
import while a check runs: the modules in ``MODELED`` get stand-in contents
(``keys``, ``policies``, the in-tree policies of ``intree``), any other name
a module of inert placeholders. A real vLLM, when importable, is never
shadowed; the modules leave ``sys.modules`` when the block ends."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from policyspec.releases import RELEASES
from policyspec.vllm.standins import intree, keys, policies
from policyspec.vllm.standins.placeholders import (
    LoadRecord,
    PlaceholderUsedError,
    StandinModule,
    is_placeholder,
)

__all__ = [
    "MODELED",
    "LoadRecord",
    "PlaceholderUsedError",
    "installed",
    "is_placeholder",
    "is_standin",
    "vllm_importable",
]

_KEYS = {
    "OffloadKey": keys.OffloadKey,
    "ReqContext": keys.ReqContext,
    "make_offload_key": keys.make_offload_key,
    "get_offload_block_hash": keys.get_offload_block_hash,
    "get_offload_group_idx": keys.get_offload_group_idx,
}


def _policy_module(home: str, *, chunks: bool = False) -> Callable[[], dict[str, Any]]:
    def contents() -> dict[str, Any]:
        names: dict[str, Any] = {
            "BlockStatus": policies.BlockStatus,
            "CachePolicy": policies.cache_policy_for(home),
        }
        if chunks:
            # As vLLM 0.33.0's module, which also re-exports the key and
            # context types it imports from kv_offload.base.
            names["ChunkStatus"] = policies.ChunkStatus
            names["order_request_keys"] = policies.order_request_keys
            names["OffloadKey"] = keys.OffloadKey
            names["ReqContext"] = keys.ReqContext
        return names

    return contents


def _fixed(names: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    return lambda: dict(names)


MODELED: dict[str, Callable[[], dict[str, Any]]] = {
    "vllm": _fixed({"__version__": "0.0.0+policyspec.standin"}),
    "vllm.logger": _fixed({"init_logger": keys.init_logger}),
    "vllm.v1": _fixed({}),
    "vllm.v1.core": _fixed({}),
    "vllm.v1.core.kv_cache_utils": _fixed({"BlockHash": keys.BlockHash}),
    "vllm.v1.kv_offload": _fixed({}),
    "vllm.v1.kv_offload.abstract": _fixed(_KEYS),
    "vllm.v1.kv_offload.base": _fixed(_KEYS),
    "vllm.v1.kv_offload.cpu_manager": _policy_module("vllm.v1.kv_offload.cpu_manager"),
    "vllm.v1.kv_offload.cpu": _fixed({}),
    "vllm.v1.kv_offload.cpu.policies": _fixed({}),
    "vllm.v1.kv_offload.cpu.policies.abstract": _policy_module(
        "vllm.v1.kv_offload.cpu.policies.abstract"
    ),
    "vllm.v1.kv_offload.cpu.policies.base": _policy_module(
        "vllm.v1.kv_offload.cpu.policies.base", chunks=True
    ),
    # The in-tree policies each release folder names (0.33.0 and 0.34.0 have
    # the same two at the same paths).
    **{module: _fixed({name: getattr(intree, name)})
       for release in RELEASES for module, name in release.intree},
}
"""The modelled modules and their contents; every other ``vllm.*`` module is
made of placeholders."""


def _children(name: str) -> frozenset[str]:
    prefix = name + "."
    rests = (m[len(prefix) :] for m in MODELED if m.startswith(prefix))
    return frozenset(rest for rest in rests if "." not in rest)


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers ``vllm`` imports with stand-in modules for one load."""

    def __init__(self, record: LoadRecord) -> None:
        self.record = record

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "vllm" and not fullname.startswith("vllm."):
            return None
        return importlib.util.spec_from_loader(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        name = spec.name
        module = StandinModule(name)
        module._policyspec_record = self.record
        module._policyspec_children = _children(name)
        module.__path__ = []
        contents = MODELED.get(name)
        if contents is None:
            self.record.note(name)
            module.__doc__ = f"policyspec placeholder for {name} (not modelled)"
        else:
            module.__doc__ = f"policyspec stand-in for {name}"
            module.__dict__.update(contents())
        return module

    def exec_module(self, module: ModuleType) -> None:
        return None


def is_standin(module: object) -> bool:
    """True for a module made by the stand-in finder."""
    return isinstance(module, StandinModule)


def vllm_importable() -> bool:
    """True when a real vLLM is imported or can be imported."""
    current = sys.modules.get("vllm")
    if current is not None:
        return not is_standin(current)
    if any(isinstance(f, _Finder) for f in sys.meta_path):
        return False
    return importlib.util.find_spec("vllm") is not None


_active: list[LoadRecord] = []


@contextmanager
def installed(kept: Sequence[str] = ()) -> Iterator[LoadRecord | None]:
    """Install the stand-ins for the duration of the block and yield the load
    record (placeholders handed out). Yields None, installing nothing, when a
    real vLLM is importable. Nested use shares the outer installation (and
    adds its kept names to it). ``kept``: unmodelled names that stay inert
    placeholders for the whole check (``--placeholder``, placeholders.py)."""
    if _active:
        _active[-1].kept += tuple(k for k in kept if k not in _active[-1].kept)
        yield _active[-1]
        return
    if vllm_importable():
        yield None
        return
    record = LoadRecord(kept)
    finder = _Finder(record)
    sys.meta_path.insert(0, finder)
    _active.append(record)
    try:
        yield record
    finally:
        _active.pop()
        sys.meta_path.remove(finder)
        for name in [n for n in sys.modules if n == "vllm" or n.startswith("vllm.")]:
            if is_standin(sys.modules[name]):
                del sys.modules[name]
        importlib.invalidate_caches()
