"""Small vLLM-shaped source trees for tests/test_drift.py, written here (our
own minimal files with the structure and the facts of vLLM 0.33.0 and
0.34.0: names, parameter lists, which calls; no vLLM code or prose).

``write_tree(root, "0.33")`` lays out ``root/vllm/v1/kv_offload/...`` whose
fingerprint equals the stored R9 one; ``"0.34"`` gives R10's. Keyword
arguments make the variations the tests need.
"""

from __future__ import annotations

import textwrap
import zipfile
from pathlib import Path

__all__ = ["write_tree", "write_wheel"]

_CONTEXT = '''
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ReqContext:
    req_id: str
    kv_transfer_params: dict[str, Any] | None = None
    kv_hints: KvHintsEnvelope | None = None
    load_tier_filter: TierFilter = TierFilter.ALL
    _state: dict = field(default_factory=dict)
{properties}
    def set_state(self, val):
        self._state[type(val)] = val

    def get_state(self, cls):
        return self._state.get(cls)

    def set_offload_key_position(self, key, end_token):
        pass

    def get_offload_key_position(self, key):
        return None
'''

_PROPERTIES = "".join(
    f"\n    @property\n    def {name}(self):\n        return None\n"
    for name in ("num_computed_tokens", "num_in_flight_tokens", "num_prompt_tokens",
                 "num_tokens")
)

_POLICY_BASE = '''
import ctypes
from abc import ABC, abstractmethod


def order_request_keys(key_groups, req_context):
    return [key for group in key_groups for key in group]


class ChunkStatus(ctypes.Structure):
    _fields_ = [("ref_cnt", ctypes.c_int32), ("chunk_id", ctypes.c_int64)]

    def __init__(self, chunk_id):
        super().__init__()
        self.ref_cnt = -1
        self.chunk_id = chunk_id

    @property
    def is_ready(self):
        return self.ref_cnt >= 0


class CachePolicy(ABC):
    def __init__(self, cache_capacity):
        self.cache_capacity = cache_capacity

    @abstractmethod
    def get(self, key): ...

    @abstractmethod
    def insert(self, key, chunk, req_context): ...

    @abstractmethod
    def remove(self, key): ...
{touch}
    def on_store_miss(self, keys, req_context):
        {store_miss}

    def on_request_access(self, keys, req_context):
        return
{finished}
    @abstractmethod
    def evict({evict}): ...

    @abstractmethod
    def clear(self): ...
{extra}
    def mark_evictable(self, key):
        return

    def mark_non_evictable(self, key):
        return
'''

_TOUCH = '''
    @abstractmethod
    def touch(self, keys, req_context): ...
'''

_FINISHED_033 = '''
    def on_request_finished(self, key_groups, insertion_only_keys, reused_keys, req_context):
        for keys in key_groups:
            self.touch(keys, req_context)
'''

_FINISHED_034 = '''
    @abstractmethod
    def on_request_finished(self, key_groups, insertion_only_keys, reused_keys, req_context):
        ...
'''

_IN_TREE = '''
from vllm.v1.kv_offload.cpu.policies.base import CachePolicy, order_request_keys


class {name}(CachePolicy):
    def on_request_finished(self, key_groups, insertion_only_keys, reused_keys, req_context):
        for key in reversed(order_request_keys(key_groups, req_context)):
            pass
'''

_MANAGER = '''
from vllm.v1.kv_offload.cpu.policies.base import CachePolicy


class CPUOffloadingManager:
    def __init__(self, num_chunks, policy_cls):
        self._policy: CachePolicy = policy_cls(cache_capacity=num_chunks)

    def lookup(self, key, req_context):
        self._policy.on_request_access([key], req_context)
        return self._policy.get(key)

    def prepare_load(self, keys):
        for key in keys:
            self._policy.mark_non_evictable(key)

    def complete_load(self, keys):
        for key in keys:
            self._policy.mark_evictable(key)
{touch}
    def prepare_store(self, keys, req_context):
        policy = self._policy
        policy.on_store_miss(keys, req_context)
        if policy.evict(len(keys), set(keys)) is None:
            return None
        for key in keys:
            policy.insert(key, None, req_context)

    def complete_store(self, keys, success):
        for key in keys:
            if not success:
                self._policy.remove(key)

    def on_request_finished(self, req_context):
        self._policy.on_request_finished([], set(), set(), req_context)

    def reset_cache(self):
        self._policy.clear()
'''

_MANAGER_TOUCH = '''
    def touch(self, keys, req_context):
        self._policy.touch(keys, req_context)
'''

_TIERING = '''
from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager


class CPUPrimaryTierOffloadingManager(CPUOffloadingManager):
    def release(self, keys):
        {release}


class Backpressure:
    """Holds a policy of another kind under the same attribute name."""

    def __init__(self, policy):
        self._policy = policy

    def store(self, tier):
        return self._policy.should_store(tier)
'''


def write_tree(
    root: Path,
    release: str,
    *,
    evict: str = "self, n, protected",
    extra: str = "",
    version: str | None = None,
) -> Path:
    """Write ``root/vllm/...`` shaped as vLLM ``release`` ("0.33" or "0.34");
    ``evict``: evict's parameter list; ``extra``: more CachePolicy body
    (indented four spaces). Returns ``root``."""
    new = release == "0.34"
    package = root / "vllm"
    offload = package / "v1" / "kv_offload"
    files = {
        package / "__init__.py": "raise RuntimeError('policyspec drift imported vllm')\n",
        package / "_version.py": f"__version__ = version = {version or release + '.0'!r}\n",
        package / "v1" / "__init__.py": "",
        offload / "__init__.py": "",
        offload / "base.py": _CONTEXT.format(properties=_PROPERTIES if new else ""),
        offload / "cpu" / "__init__.py": "",
        offload / "cpu" / "policies" / "__init__.py": "",
        offload / "cpu" / "policies" / "base.py": _POLICY_BASE.format(
            touch="" if new else _TOUCH,
            store_miss="return" if new else "self.touch(keys, req_context)",
            finished=_FINISHED_034 if new else _FINISHED_033,
            evict=evict,
            extra=textwrap.indent(textwrap.dedent(extra), "    "),
        ),
        offload / "cpu" / "policies" / "lru.py": _IN_TREE.format(name="LRUCachePolicy"),
        offload / "cpu" / "policies" / "arc.py": _IN_TREE.format(name="ARCCachePolicy"),
        offload / "cpu" / "manager.py": _MANAGER.format(touch="" if new else _MANAGER_TOUCH),
        offload / "tiering" / "__init__.py": "",
        offload / "tiering" / "manager.py": _TIERING.format(
            release="for key in keys:\n"
            "            if self._policy.get(key) is not None:\n"
            "                self._policy.remove(key)" if new else "return keys"
        ),
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def write_wheel(tree: Path, wheel: Path, version: str) -> Path:
    """Zip ``tree/vllm`` as a wheel with a dist-info naming ``version``."""
    with zipfile.ZipFile(wheel, "w") as archive:
        for path in sorted((tree / "vllm").rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(tree).as_posix())
        info = f"vllm-{version}.dist-info"
        archive.writestr(f"{info}/METADATA",
                         f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n\nText.\n")
        archive.writestr(f"{info}/WHEEL",
                         "Wheel-Version: 1.0\nGenerator: policyspec-tests\nRoot-Is-Purelib: "
                         "true\nTag: py3-none-any\n")
        archive.writestr(f"{info}/RECORD", "")
    return wheel
