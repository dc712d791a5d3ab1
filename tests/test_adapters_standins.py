"""The vLLM stand-ins: what they provide, that they exist only while a target
loads, that they never shadow a real vLLM, and that unmodelled names are
inert placeholders until the check starts."""

from __future__ import annotations

import ctypes
import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from policyspec.adapters import PlaceholderUsedError, installed, load_subject
from policyspec.model.request import GROUP_STRIDE
from policyspec.subject import offload_key
from policyspec.vllm.standins import keys as standin_keys
from policyspec.vllm.standins import policies as standin_policies


def _vllm_modules() -> list[str]:
    return [m for m in sys.modules if m == "vllm" or m.startswith("vllm.")]


def test_block_status_has_vllms_exact_layout() -> None:
    cls = standin_policies.BlockStatus
    assert cls._fields_ == [("ref_cnt", ctypes.c_int32), ("block_id", ctypes.c_int64)]
    block = cls(5)
    assert (block.ref_cnt, block.block_id, block.is_ready) == (-1, 5, False)
    block.ref_cnt = 0
    assert block.is_ready
    block.ref_cnt = 2**31  # int32 wraps, as in vLLM
    assert block.ref_cnt == -(2**31)


def test_chunk_status_names_the_id_chunk_id() -> None:
    chunk = standin_policies.ChunkStatus(9)
    assert standin_policies.ChunkStatus._fields_[1] == ("chunk_id", ctypes.c_int64)
    assert (chunk.ref_cnt, chunk.chunk_id, chunk.is_ready) == (-1, 9, False)


def test_offload_key_helpers_pack_hash_and_big_endian_group() -> None:
    key = standin_keys.make_offload_key(b"\xab" * 16, 258)
    assert key == b"\xab" * 16 + b"\x00\x00\x01\x02"
    assert standin_keys.get_offload_block_hash(key) == b"\xab" * 16
    assert standin_keys.get_offload_group_idx(key) == 258
    # policyspec's own keys use the same format
    model_key = 7 * GROUP_STRIDE + 3  # key 3 of KV group 7
    assert standin_keys.get_offload_group_idx(standin_keys.OffloadKey(offload_key(model_key))) == 7


def test_req_context_carries_request_id_and_key_positions() -> None:
    ctx = standin_keys.ReqContext("req-1")
    ctx.set_offload_key_position(b"k2", 32)
    ctx.set_offload_key_position(b"k1", 16)
    assert ctx.req_id == "req-1" and ctx.kv_transfer_params is None
    ordered = standin_policies.order_request_keys([[b"k2"], [b"k1"]], ctx)
    assert ordered == [b"k1", b"k2"]


def test_cache_policy_defaults_are_the_revisions_no_ops() -> None:
    class Touchy(standin_policies.CachePolicy):
        def __init__(self, cache_capacity: int) -> None:
            super().__init__(cache_capacity)
            self.touched: list[object] = []

        def get(self, key: object) -> None:
            return None

        def insert(self, key: object, block: object) -> None: ...

        def remove(self, key: object) -> None: ...

        def touch(self, keys: object, req_context: object = None) -> None:
            self.touched.append(keys)

        def evict(self, n: int, protected: object) -> list[object]:
            return []

    policy = Touchy(cache_capacity=3)
    assert policy.cache_capacity == 3
    assert policy.mark_evictable(b"k") is None and policy.mark_non_evictable(b"k") is None
    with pytest.raises(NotImplementedError):
        policy.evict_until(lambda _c: True, set())
    policy.on_store_miss([b"a"], None)
    policy.on_request_finished([[b"b"], [b"c"]], set(), set(), None)  # R8: a touch per group
    policy.on_request_finished(None)  # R6: no-op
    assert policy.on_request_access([b"d"], None) is None  # R9: no-op
    assert policy.on_request_access([b"d"], None, inserted=True) is None  # the ztysth fork's
    assert policy.touched == [[b"a"], [b"b"], [b"c"]]


def test_stand_ins_exist_only_inside_the_block() -> None:
    assert _vllm_modules() == []
    with installed() as record:
        assert record is not None
        base = importlib.import_module("vllm.v1.kv_offload.cpu.policies.base")
        assert base.BlockStatus is standin_policies.BlockStatus
        from vllm.v1.kv_offload import base as offload_base  # type: ignore[import-not-found]

        assert offload_base.make_offload_key is standin_keys.make_offload_key
        from vllm.logger import init_logger  # type: ignore[import-not-found]

        assert init_logger("x").name == "x"
        assert "vllm.v1.kv_offload.cpu.policies.base" in _vllm_modules()
    assert _vllm_modules() == []
    assert importlib.util.find_spec("vllm") is None


def test_older_homes_of_cache_policy_are_modelled() -> None:
    with installed():
        old = importlib.import_module("vllm.v1.kv_offload.cpu.policies.abstract")
        oldest = importlib.import_module("vllm.v1.kv_offload.cpu_manager")
        keys_r0 = importlib.import_module("vllm.v1.kv_offload.abstract")
        hashes = importlib.import_module("vllm.v1.core.kv_cache_utils")
        assert issubclass(old.CachePolicy, standin_policies.CachePolicy)
        assert old.CachePolicy._policyspec_standin == "vllm.v1.kv_offload.cpu.policies.abstract"
        assert oldest.CachePolicy._policyspec_standin == "vllm.v1.kv_offload.cpu_manager"
        assert keys_r0.OffloadKey is standin_keys.OffloadKey
        assert hashes.BlockHash(b"x") == b"x"


def test_unmodelled_names_are_inert_while_loading_and_named_when_used() -> None:
    with installed() as record:
        assert record is not None
        from vllm.v1.kv_offload.cpu import manager  # type: ignore[import-not-found]
        from vllm.v1.kv_offload.cpu.spec import (  # type: ignore[import-not-found]
            CPUOffloadingSpec,
        )

        class Spec(CPUOffloadingSpec):  # type: ignore[misc]
            def __init__(self) -> None:
                super().__init__({"cpu_bytes_to_use": 1})

        manager._CACHE_POLICIES["mine"] = Spec  # registration at import time
        assert manager.CPUOffloadingManager(block_size=16) is not None
        assert isinstance(Spec(), Spec)
        record.arm()
        with pytest.raises(PlaceholderUsedError, match=r"vllm\.v1\.kv_offload\.cpu\.spec\.CPU"):
            Spec()
        with pytest.raises(PlaceholderUsedError, match="CPUOffloadingManager is an inert"):
            manager.CPUOffloadingManager()
        with pytest.raises(PlaceholderUsedError, match=r"manager\.anything_new"):
            _ = manager.anything_new
    assert "vllm.v1.kv_offload.cpu.spec.CPUOffloadingSpec" in record.names


def test_policy_using_a_placeholder_fails_during_the_check_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "uses_manager.py"
    path.write_text(textwrap.dedent(
        """
        from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager
        from vllm.v1.kv_offload.cpu.policies.base import CachePolicy


        class Leaky(CachePolicy):
            def __init__(self, cache_capacity):
                self.blocks = {}

            def get(self, key):
                return self.blocks.get(key)

            def insert(self, key, block):
                self.blocks[key] = block

            def remove(self, key):
                del self.blocks[key]

            def touch(self, keys):
                CPUOffloadingManager.note_touch(keys)

            def evict(self, n, protected):
                return [] if n == 0 else None
        """
    ))
    subject = load_subject(f"{path}:Leaky")
    assert any("CPUOffloadingManager" in note for note in subject.notes)
    policy = subject.build(4)
    with pytest.raises(PlaceholderUsedError, match=r"CPUOffloadingManager\.note_touch"):
        policy.touch([subject.make_key(1)])


@pytest.fixture
def fake_real_vllm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory with a package named vllm on sys.path: a "real" vLLM."""
    pkg = tmp_path / "vllm"
    (pkg / "v1" / "kv_offload").mkdir(parents=True)
    (pkg / "__init__.py").write_text("REAL = True\n")
    (pkg / "v1" / "__init__.py").write_text("")
    (pkg / "v1" / "kv_offload" / "__init__.py").write_text("")
    (pkg / "v1" / "kv_offload" / "base.py").write_text(
        "from dataclasses import dataclass\n\n@dataclass\nclass ReqContext:\n    req_id: str\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in _vllm_modules():
        del sys.modules[name]


def test_a_real_vllm_is_never_shadowed(fake_real_vllm: Path) -> None:
    with installed() as record:
        assert record is None
        import vllm  # type: ignore[import-not-found]

        assert vllm.REAL is True
    policy = fake_real_vllm / "real_user.py"
    policy.write_text(GOOD_WITH_REAL_VLLM)
    subject = load_subject(f"{policy}:UsesReal")
    assert "vLLM is installed: the policy ran against its own modules" in subject.notes
    assert type(subject.build(2).req_context).__module__ == "vllm.v1.kv_offload.base"


GOOD_WITH_REAL_VLLM = """
from vllm.v1.kv_offload.base import ReqContext


class UsesReal:
    def __init__(self, cache_capacity):
        self.blocks = {}

    def get(self, key):
        return self.blocks.get(key)

    def insert(self, key, block):
        self.blocks[key] = block

    def remove(self, key):
        del self.blocks[key]

    def touch(self, keys, req_context: ReqContext):
        pass

    def evict(self, n, protected):
        return [] if n == 0 else None
"""
