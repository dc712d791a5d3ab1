"""policyspec's vLLM stand-ins (policyspec.vllm.standins) against the
real vLLM 0.33.0 and 0.34.0 (run by .ci/vllm.sh in each): every name a stand-in module
provides exists in vLLM's module with the same call signature, every
deliberate difference is listed here with its reason (a new one, or one
that went away, fails), and the ``CachePolicy`` ABC's abstract methods and
defaults behave alike.
"""

from __future__ import annotations

import ctypes
import dataclasses
import importlib
import importlib.util
import inspect
from types import ModuleType
from typing import Any

import pytest
from vllm_env import installed_release, require_vllm

from policyspec.vllm.standins import MODELED, keys, policies

RELEASE = installed_release(require_vllm("vllm.v1.kv_offload.cpu.policies.base"))

OLDER_HOMES = {
    "vllm.v1.kv_offload.abstract": "R0's home of OffloadKey",
    "vllm.v1.kv_offload.cpu_manager": "R-1's home of CachePolicy",
    "vllm.v1.kv_offload.cpu.policies.abstract": "R0's home of CachePolicy",
}
"""Stand-in modules for homes of earlier revisions, gone in 0.33.0."""

EXTRA_NAMES = {
    ("vllm.v1.kv_offload.cpu.policies.base", "BlockStatus"): (
        "the record of revisions before the chunk rename (R-1 to R6)"
    ),
}
"""Names a stand-in provides that vLLM 0.33.0's module does not."""

EXTRA_METHODS = {
    "evict_until": "R7 (a pull-request head, never released)",
    "record_lookup": "R6 session hooks (a pull-request head)",
    "open_session": "R6 session hooks (a pull-request head)",
    "close_session": "R6 session hooks (a pull-request head)",
}
if RELEASE == "0.34":
    EXTRA_METHODS["touch"] = "gone in 0.34.0; R-1 to R9 policies define it (not abstract here)"
"""Methods of the stand-in CachePolicy that the installed release's has not."""

NOT_IN_THE_ABC = {
    "clear": "R0 and R1 policies have no clear() and must still build; a default would "
             "make them look as if they had one (capabilities are read from the class)",
}
"""Abstract in 0.33.0 and 0.34.0, absent from the stand-in ABC (one ABC for
every revision)."""

NOT_ABSTRACT_HERE = {
    "0.33": {"touch": "abstract up to 0.33.0, gone from 0.34.0: an R10 policy must build"},
    "0.34": {"on_request_finished": "abstract from 0.34.0 only: an R8 or R9 policy that "
                                    "keeps 0.33's default must build"},
}[RELEASE]
"""Abstract in the installed release, a method with a default here."""

MISSING_FIELDS = {"load_tier_filter": "the tiering package's TierFilter is not modelled"}
"""ReqContext fields of 0.33.0 the stand-in has not."""


def real(name: str) -> ModuleType:
    return importlib.import_module(name)


def standin_names(module: str) -> dict[str, Any]:
    return {k: v for k, v in MODELED[module]().items() if not k.startswith("__")}


def parameters(obj: Any) -> list[tuple[str, Any, Any]]:
    """A signature as (name, kind, default): annotations differ on purpose
    (the stand-ins annotate with plain types, vLLM with its own)."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(obj).parameters.values()]


def test_the_older_homes_are_gone_in_0_33_and_every_other_module_exists() -> None:
    for module in MODELED:
        if module in OLDER_HOMES:
            assert importlib.util.find_spec(module) is None, module
        else:
            real(module)


def test_every_name_a_standin_provides_exists_in_vllm_with_its_signature() -> None:
    extras = set()
    for module in MODELED:
        if module in OLDER_HOMES:
            continue
        theirs = real(module)
        for name, ours in standin_names(module).items():
            if not hasattr(theirs, name):
                extras.add((module, name))
                continue
            theirs_obj = getattr(theirs, name)
            if inspect.isfunction(ours):
                assert parameters(ours) == parameters(theirs_obj), f"{module}.{name}"
            elif isinstance(ours, type) and name not in ("CachePolicy", "ReqContext"):
                # (the ABC and ReqContext have tests of their own below)
                assert parameters(ours) == parameters(theirs_obj), f"{module}.{name}"
    assert extras == set(EXTRA_NAMES)


def test_the_policy_module_provides_every_name_vllms_exports_to_policies() -> None:
    """A policy may import anything vLLM's module defines or re-exports
    (standard-library names aside)."""
    module = "vllm.v1.kv_offload.cpu.policies.base"
    theirs = {
        name for name, value in vars(real(module)).items()
        if not name.startswith("_")
        and (getattr(value, "__module__", "") or "").startswith("vllm")
    }
    assert theirs == {"CachePolicy", "ChunkStatus", "OffloadKey", "ReqContext",
                      "order_request_keys"}
    assert theirs <= set(standin_names(module))


def test_keys_are_laid_out_as_vllms() -> None:
    base = real("vllm.v1.kv_offload.base")
    for block_hash, group in ((b"", 0), (b"\x01\x02", 7), (bytes(32), 2**32 - 1)):
        ours = keys.make_offload_key(block_hash, group)
        assert ours == base.make_offload_key(block_hash, group)
        assert keys.get_offload_group_idx(ours) == base.get_offload_group_idx(ours) == group
        assert keys.get_offload_block_hash(ours) == base.get_offload_block_hash(ours)


def test_req_context_has_vllms_fields_methods_and_behaviour() -> None:
    theirs_cls = real("vllm.v1.kv_offload.base").ReqContext
    theirs = {f.name: f for f in dataclasses.fields(theirs_cls)}
    ours = {f.name: f for f in dataclasses.fields(keys.ReqContext)}
    assert set(theirs) - set(ours) == set(MISSING_FIELDS) and set(ours) <= set(theirs)
    for name, field in ours.items():
        assert field.init == theirs[name].init, name
        assert field.default == theirs[name].default, name
    for method in ("set_state", "get_state", "set_offload_key_position",
                   "get_offload_key_position"):
        assert parameters(getattr(keys.ReqContext, method)) == parameters(
            getattr(theirs_cls, method)
        ), method
    for cls in (keys.ReqContext, theirs_cls):
        ctx = cls("r")
        assert ctx.get_state(int) is None
        ctx.set_state(3)
        ctx.set_state(4)
        ctx.set_state("s")
        assert (ctx.get_state(int), ctx.get_state(str)) == (4, "s")
        assert ctx.get_offload_key_position(b"k") is None
        ctx.set_offload_key_position(b"k", 32)
        assert ctx.get_offload_key_position(b"k") == 32


def test_chunk_status_has_vllms_layout() -> None:
    theirs = real("vllm.v1.kv_offload.cpu.policies.base").ChunkStatus
    assert policies.ChunkStatus._fields_ == theirs._fields_
    assert ctypes.sizeof(policies.ChunkStatus) == ctypes.sizeof(theirs)
    for cls in (policies.ChunkStatus, theirs):
        chunk = cls(5)
        assert (chunk.ref_cnt, chunk.chunk_id, chunk.is_ready) == (-1, 5, False)
        chunk.ref_cnt = 0
        assert chunk.is_ready


def test_order_request_keys_orders_as_vllms() -> None:
    theirs = real("vllm.v1.kv_offload.cpu.policies.base").order_request_keys
    ctx_cls = real("vllm.v1.kv_offload.base").ReqContext
    groups = ((b"c", b"a"), (b"b",))
    for positions in ({b"a": 1, b"b": 2, b"c": 3}, {b"a": 1, b"c": 3}, {b"a": 2, b"b": 2, b"c": 1}):
        ctx = ctx_cls("r")
        for key, position in positions.items():
            ctx.set_offload_key_position(key, position)
        assert policies.order_request_keys(groups, ctx) == theirs(groups, ctx)


def _abc_methods(cls: type) -> set[str]:
    return {name for name, value in vars(cls).items()
            if callable(value) and not name.startswith("_")}


def test_the_abc_has_vllms_methods_abstract_where_vllms_are() -> None:
    theirs = real("vllm.v1.kv_offload.cpu.policies.base").CachePolicy
    ours = policies.CachePolicy
    assert _abc_methods(ours) - _abc_methods(theirs) == set(EXTRA_METHODS)
    assert _abc_methods(theirs) - _abc_methods(ours) == set(NOT_IN_THE_ABC)
    assert set(theirs.__abstractmethods__) - set(ours.__abstractmethods__) == (
        set(NOT_IN_THE_ABC) | set(NOT_ABSTRACT_HERE))
    assert set(ours.__abstractmethods__) <= set(theirs.__abstractmethods__)
    assert parameters(ours.__init__)[:2] == parameters(theirs.__init__)


@pytest.mark.parametrize(
    "method",
    ["on_store_miss", "on_request_access", "on_request_finished", "mark_evictable",
     "mark_non_evictable", "__init__"],
)
def test_every_call_of_a_default_binds_on_the_standin(method: str) -> None:
    theirs = inspect.signature(getattr(real(
        "vllm.v1.kv_offload.cpu.policies.base").CachePolicy, method))
    ours = inspect.signature(getattr(policies.CachePolicy, method))
    names = list(theirs.parameters)
    values = [object() for _ in names]
    ours.bind(*values)
    ours.bind(values[0], **dict(zip(names[1:], values[1:], strict=True)))


def _recording(base: type, *, touches: bool) -> Any:
    """A policy that records what the defaults do: with ``touch`` (an R9
    class, whose finish is the default) or without (an R10 class, which
    must define its finish itself)."""

    class Policy(base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            super().__init__(cache_capacity=4)
            self.touched: list[tuple[list[Any], Any]] = []

        def get(self, key: Any) -> Any: ...
        def insert(self, key: Any, chunk: Any, req_context: Any) -> None: ...
        def remove(self, key: Any) -> None: ...
        def evict(self, n: int, protected: Any) -> Any: ...
        def clear(self) -> None: ...

    if touches:
        def touch(self: Any, keys: Any, req_context: Any) -> None:
            self.touched.append((list(keys), req_context))

        Policy.touch = touch
    else:
        def on_request_finished(self: Any, key_groups: Any, insertion_only_keys: Any,
                                reused_keys: Any, req_context: Any) -> None:
            return None

        Policy.on_request_finished = on_request_finished
    Policy.__abstractmethods__ = frozenset(
        m for m in Policy.__abstractmethods__ if not callable(vars(Policy).get(m)))
    return Policy()


def test_the_defaults_behave_as_vllms() -> None:
    """0.33.0's defaults touch (a class must define touch); 0.34.0's do
    nothing (a class may lack touch and must define its finish). The
    stand-in's touch when the class defines touch and do nothing otherwise,
    so each release's own classes see its defaults."""
    touches = RELEASE == "0.33"
    theirs = _recording(real("vllm.v1.kv_offload.cpu.policies.base").CachePolicy,
                        touches=touches)
    ours = _recording(policies.CachePolicy, touches=touches)
    ctx = object()
    for policy in (theirs, ours):
        assert policy.cache_capacity == 4
        assert policy.on_store_miss([b"a", b"b"], ctx) is None
        assert policy.on_request_access([b"c"], ctx) is None
        assert policy.on_request_finished(((b"a",), (b"b", b"c")), {b"a"}, set(), ctx) is None
        assert policy.on_request_finished(
            key_groups=((b"d",),), insertion_only_keys=set(), reused_keys=set(),
            req_context=ctx,
        ) is None
        assert policy.mark_evictable(b"a") is None
        assert policy.mark_non_evictable(b"a") is None
    expected = [
        ([b"a", b"b"], ctx), ([b"a"], ctx), ([b"b", b"c"], ctx), ([b"d"], ctx),
    ] if touches else []
    assert theirs.touched == ours.touched == expected


IN_TREE = {
    "vllm.v1.kv_offload.cpu.policies.lru": "LRUCachePolicy",
    "vllm.v1.kv_offload.cpu.policies.arc": "ARCCachePolicy",
}
"""The in-tree policies the stand-ins provide (``standins.intree``)."""

IN_TREE_EXTRA = {
    "request_rank": "the reference LRU's helper giving a request's rank (policyspec.reference)",
}
if RELEASE == "0.34":
    IN_TREE_EXTRA["touch"] = "one class serves 0.33.0 and 0.34.0, and 0.34.0 removed touch"
"""Public methods a stand-in in-tree policy has that the release's has not
(besides the stand-in base's, ``EXTRA_METHODS``)."""


@pytest.mark.parametrize("module", sorted(IN_TREE))
def test_the_in_tree_stand_ins_have_vllms_public_methods(module: str) -> None:
    """Each public method of vLLM's in-tree policy is the stand-in's, taking
    the same parameters, so a subclass calls them through super() alike."""
    name = IN_TREE[module]
    theirs, ours = getattr(real(module), name), MODELED[module]()[name]
    assert parameters(ours) == parameters(theirs)
    mine, vllms = _public(ours), _public(theirs)
    assert mine - vllms <= set(IN_TREE_EXTRA) | set(EXTRA_METHODS)
    assert vllms <= mine
    for method in vllms - {"__init__"}:
        assert [p[0] for p in parameters(getattr(ours, method))] == [
            p[0] for p in parameters(getattr(theirs, method))], method


def _public(cls: type) -> set[str]:
    return {n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n))}
