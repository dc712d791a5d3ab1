"""Revision detection, the static signature check, and the Protocols authors
type-check against (spec/contract.md)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from policyspec.adapters import TargetError, subject_for_class
from policyspec.adapters.revisions import detect
from policyspec.protocols import API_NAMES, REVISIONS, signature_problems
from policyspec.vllm.standins import policies as sp


class _Six:
    """The methods every revision shares; subclasses vary the rest."""

    def __init__(self, cache_capacity: int) -> None:
        self.blocks: dict[Any, Any] = {}

    def get(self, key: Any) -> Any:
        return self.blocks.get(key)

    def insert(self, key: Any, block: Any) -> None:
        self.blocks[key] = block

    def remove(self, key: Any) -> None:
        del self.blocks[key]

    def touch(self, keys: Any) -> None:
        pass

    def evict(self, n: int, protected: Any) -> Any:
        return [] if n == 0 else None


class R1(_Six):
    pass


class R2(_Six):
    def clear(self) -> None:
        self.blocks.clear()


class R3(R2):
    def mark_evictable(self, key: Any) -> None:
        pass

    def mark_non_evictable(self, key: Any) -> None:
        pass


class R4(R2):
    def touch(self, keys: Any, req_context: Any) -> None:
        pass


class R6(R4):
    def evict(self, n: int, protected: Any, req_context: Any, num_blocks_in_cache: int) -> Any:
        return [] if n == 0 else None

    def open_session(self, req_context: Any, num_blocks_in_cache: int) -> None:
        pass

    def close_session(self) -> None:
        pass


class R6Draft(R4):
    def evict(self, n: int, protected: Any, req_id: str, start_pos: int) -> Any:
        return [] if n == 0 else None


class R7(R4):
    def insert(self, key: Any, chunk: Any) -> None:
        self.blocks[key] = chunk

    def evict_until(self, can_fit: Any, protected: Any) -> Any:
        return None


class R7b(R7):
    def evict(self, n: int, protected: Any, deprioritized: Any) -> Any:
        return [] if n == 0 else None


class R8(R4):
    def on_store_miss(self, keys: Any, req_context: Any) -> None:
        pass


class R9(R8):
    """vLLM 0.33.0: insert gets the storing request's context."""

    def insert(self, key: Any, chunk: Any, req_context: Any) -> None:
        self.blocks[key] = (chunk, req_context)

    def on_request_access(self, keys: Any, req_context: Any) -> None:
        pass


class R9AccessOnly(R8):
    """The upstream hook, and an insert that accepts (not requires) a context."""

    def insert(self, key: Any, chunk: Any, req_context: Any = None) -> None:
        self.blocks[key] = chunk

    def on_request_access(self, keys: Any, req_context: Any) -> None:
        pass


class ZtysthFork(R8):
    """ztysth's fork: R8 with on_request_access(..., *, inserted) and a
    two-argument insert."""

    def on_request_access(self, keys: Any, req_context: Any, *, inserted: bool = False) -> None:
        pass


class R8TouchOnly(R2):
    def touch(self, keys: Any, req_context: Any | None) -> None:
        pass


class RMinus1(_Six):
    def get(self, block_hash: Any) -> Any:
        return self.blocks.get(block_hash)


class OnStandinR0(sp.cache_policy_for("vllm.v1.kv_offload.cpu.policies.abstract")):  # type: ignore[misc]
    get, insert, remove, touch, evict = _Six.get, _Six.insert, _Six.remove, _Six.touch, _Six.evict

    def __init__(self, cache_capacity: int) -> None:
        self.blocks = {}


class OnStandinR7(sp.CachePolicy):
    """Inherits every default of the stand-in ABC, defines evict_until itself."""

    get, insert, remove, evict = _Six.get, _Six.insert, _Six.remove, _Six.evict

    def __init__(self, cache_capacity: int) -> None:
        self.blocks: dict[Any, Any] = {}

    def touch(self, keys: Any, req_context: Any) -> None:
        pass

    def evict_until(self, can_fit: Any, protected: Any) -> Any:
        return None

    def clear(self) -> None:
        pass


@pytest.mark.parametrize(
    ("cls", "api"),
    [
        (RMinus1, "R-1"), (OnStandinR0, "R0"), (R1, "R1"), (R2, "R2"), (R3, "R3"), (R4, "R4"),
        (R6, "R6"), (R6Draft, "R6-draft"), (R7, "R7"), (R7b, "R7b"), (R8, "R8"),
        (R8TouchOnly, "R8"), (OnStandinR7, "R7"), (R9, "R9"), (R9AccessOnly, "R9"),
        (ZtysthFork, "R8"),
    ],
)
def test_revision_is_detected_from_the_class_itself(cls: type, api: str) -> None:
    assert detect(cls).api == api
    assert subject_for_class(cls).api == api


class OnStandinR0BlockHash(sp.cache_policy_for("vllm.v1.kv_offload.cpu.policies.abstract")):  # type: ignore[misc]
    """A fork's R0 file that kept R-1's parameter names."""

    insert, remove, touch, evict = _Six.insert, _Six.remove, _Six.touch, _Six.evict

    def __init__(self, cache_capacity: int) -> None:
        self.blocks: dict[Any, Any] = {}

    def get(self, block_hash: Any) -> Any:
        return self.blocks.get(block_hash)


class OnStandinRMinus1(sp.cache_policy_for("vllm.v1.kv_offload.cpu_manager")):  # type: ignore[misc]
    get, insert, remove, touch, evict = _Six.get, _Six.insert, _Six.remove, _Six.touch, _Six.evict

    def __init__(self, cache_capacity: int) -> None:
        self.blocks: dict[Any, Any] = {}


@pytest.mark.parametrize(
    ("cls", "api", "evidence"),
    [
        (OnStandinR0BlockHash, "R0", "its CachePolicy comes from "
         "vllm.v1.kv_offload.cpu.policies.abstract"),
        (OnStandinR0, "R0", "its CachePolicy comes from vllm.v1.kv_offload.cpu.policies.abstract"),
        (OnStandinRMinus1, "R-1", "its CachePolicy comes from vllm.v1.kv_offload.cpu_manager"),
        (RMinus1, "R-1", "no vLLM CachePolicy base, and get's parameter is named block_hash"),
        (R1, "R1", "six original methods only (no vLLM CachePolicy base"),
    ],
)
def test_the_import_home_decides_before_a_parameter_name_and_the_reason_names_it(
    cls: type, api: str, evidence: str
) -> None:
    found = detect(cls)
    assert found.api == api
    assert evidence in found.reason, found.reason


def test_stand_in_defaults_are_not_taken_for_the_policys_own_methods() -> None:
    found = detect(OnStandinR7)
    assert found.hooks == ("evict_until",)  # not open_session, on_store_miss, ... of the ABC
    subject = subject_for_class(OnStandinR7)
    assert subject.capabilities == frozenset({"clear", "evict_until", "touch"})  # no own mark_*


def test_r9_is_detected_from_insert_or_the_upstream_access_hook() -> None:
    assert detect(R9).reason == "insert takes (key, chunk, req_context)"
    assert detect(R9AccessOnly).reason == (
        "it defines on_request_access and insert accepts a req_context"
    )
    assert "on_request_access" in detect(R9).hooks


def test_ztysth_access_hook_is_noted_but_not_taken_for_r9() -> None:
    found = detect(ZtysthFork)
    assert found.api == "R8"  # its insert takes two arguments: never driven with three
    assert "ztysth fork's keyword inserted" in found.reason
    assert found.fork_hooks == ()  # on_request_access is upstream API since vLLM 0.33.0
    assert "on_request_access" in found.hooks


def test_r9_insert_gets_the_adapters_request_context() -> None:
    subject = subject_for_class(R9)
    # 0.33's manager calls hooks (and touch)
    assert subject.capabilities == frozenset({"clear", "hooks", "touch"})
    policy = subject.build(2)
    policy.insert(b"k", "chunk")
    policy.use_request("other")  # type: ignore[attr-defined]
    policy.insert(b"j", "chunk")
    held = policy.policy.blocks  # type: ignore[attr-defined]
    assert held[b"k"][0] == "chunk" and held[b"k"][1].req_id == "policyspec-req-0"
    assert held[b"j"][1].req_id == "other"
    assert signature_problems(R9, "R9") == []
    assert signature_problems(ZtysthFork, "R9") == [
        "ZtysthFork.insert(key, block) cannot be called as insert(key, chunk, req_context), "
        "as revision R9 calls it"
    ]


class T4t4KAUFork(R4):
    def on_new_request(self, req_context: Any) -> None:
        pass

    def on_request_finished(self, req_context: Any) -> None:
        pass


class HotSwapFork(_Six):
    """ophirazulai's hot-swap variant: optional contexts, no clear, no mark."""

    def insert(self, key: Any, block: Any, req_context: Any = None) -> None:
        self.blocks[key] = block

    def touch(self, keys: Any, req_context: Any = None) -> None:
        pass

    def evict(self, n: int, protected: Any, req_context: Any = None) -> Any:
        return [] if n == 0 else None

    def export_state(self) -> Any:
        return list(self.blocks.items())


def test_fork_hooks_are_listed_and_never_required() -> None:
    fork = subject_for_class(T4t4KAUFork)
    assert fork.api == "R4"
    assert any("on_new_request (T4t4KAU fork)" in note for note in fork.notes)
    swap = subject_for_class(HotSwapFork)
    assert swap.api == "R1"  # every extra parameter is optional: callable as R1
    assert any("export_state (ophirazulai hot-swap fork)" in n for n in swap.notes)
    assert isinstance(swap.build(2), HotSwapFork)


def test_forcing_a_revision_overrides_detection_and_notes_mismatches() -> None:
    subject = subject_for_class(R4, api="R3")
    assert subject.api == "R3"
    assert "API revision R3 forced (detection says R4: touch takes (keys, req_context))" in (
        subject.notes
    )
    mismatch = (
        "R4.touch(keys, req_context) cannot be called as touch(keys), as revision R3 calls it"
    )
    assert mismatch in subject.notes
    with pytest.raises(TypeError):  # the check then reports the failing call
        subject.build(2).touch([b"k"])


def test_signature_problems_name_method_and_revision() -> None:
    class Odd(_Six):
        def touch(self) -> None:  # type: ignore[override]
            pass

        def evict(self, n: int, protected: Any, *, budget: int) -> Any:  # type: ignore[override]
            return None

    assert signature_problems(Odd, "R2") == [
        "Odd.touch() cannot be called as touch(keys), as revision R2 calls it",
        "Odd.evict(n, protected, budget) cannot be called as evict(n, protected), as revision "
        "R2 calls it",
        "Odd has no clear(), which R2 declares abstract; requirements that need it do not apply",
    ]
    assert signature_problems(R3, "R3") == []


def test_missing_core_method_is_a_target_error_naming_the_revision() -> None:
    class NoEvict:
        def __init__(self, cache_capacity: int) -> None: ...
        def get(self, key: Any) -> None: ...
        def insert(self, key: Any, block: Any) -> None: ...
        def remove(self, key: Any) -> None: ...
        def touch(self, keys: Any, req_context: Any) -> None: ...

    with pytest.raises(TargetError, match=r"^NoEvict lacks evict, required by API revision R4"):
        subject_for_class(NoEvict)


def test_every_revision_has_a_protocol_and_core_methods() -> None:
    assert API_NAMES[0] == "R-1" and API_NAMES[-1] == "R10"
    for revision in REVISIONS.values():
        names = {m.name for m in revision.methods if m.kind == "core"}
        # vLLM 0.34.0 (R10) removed touch
        touch = set() if revision.name == "R10" else {"touch"}
        assert names == {"get", "insert", "remove", "evict"} | touch
        for method in revision.methods:
            assert hasattr(revision.protocol, method.name), (revision.name, method.name)


MYPY_CASE = """
from collections.abc import Iterable
from typing import Any
from policyspec.protocols import CachePolicyR3, CachePolicyR4


class Seed:
    def get(self, key: bytes) -> Any: ...
    def insert(self, key: bytes, block: Any) -> None: ...
    def remove(self, key: bytes) -> None: ...
    def touch(self, keys: Iterable[bytes]) -> None: ...
    def evict(self, n: int, protected: set[bytes]) -> list[tuple[bytes, Any]] | None: ...
    def clear(self) -> None: ...
    def mark_evictable(self, key: bytes) -> None: ...
    def mark_non_evictable(self, key: bytes) -> None: ...


def as_r3(p: Seed) -> CachePolicyR3:
    return p


def as_r4(p: Seed) -> CachePolicyR4:
    return p
"""


def test_protocols_let_mypy_check_a_policy_against_its_revision(tmp_path: Path) -> None:
    mypy_api = pytest.importorskip("mypy.api")
    case = tmp_path / "case.py"
    case.write_text(textwrap.dedent(MYPY_CASE))
    out, _err, status = mypy_api.run(
        [str(case), "--cache-dir", str(tmp_path / ".mypy_cache"), "--no-error-summary"]
    )
    errors = [line for line in out.splitlines() if ": error:" in line]
    # a seed policy is an R3 policy, but not an R4 one: touch lacks req_context
    assert status == 1
    assert len(errors) == 1, out
    assert 'expected "CachePolicyR4"' in errors[0]
    assert "def touch(self, Iterable[Any], Any, /) -> None" in out


@pytest.mark.parametrize(
    ("cls", "released"),
    [(R6, False), (R6Draft, False), (R7, False), (R7b, False), (R8, True), (R9, True),
     (R4, True)],
)
def test_revisions_from_pull_request_heads_say_they_never_shipped(
    cls: type, released: bool
) -> None:
    notes = subject_for_class(cls).notes
    said = [n for n in notes if "never shipped in a vLLM release" in n]
    assert bool(said) is not released, notes
    assert notes[0].startswith("API revision")  # the note follows the revision's own


def test_the_api_help_names_the_revisions_that_never_shipped() -> None:
    from policyspec.protocols import API_HELP, UNRELEASED

    assert UNRELEASED == ("R6", "R6-draft", "R7", "R7b")
    assert all(name in API_HELP for name in UNRELEASED) and "never shipped" in API_HELP


class R10FromScratch:
    """An R10 policy written with no base class: no touch at all."""

    def __init__(self, cache_capacity: int) -> None:
        self.blocks: dict[Any, Any] = {}

    def get(self, key: Any) -> Any:
        return self.blocks.get(key)

    def insert(self, key: Any, chunk: Any, req_context: Any) -> None:
        self.blocks[key] = chunk

    def remove(self, key: Any) -> None:
        del self.blocks[key]

    def evict(self, n: int, protected: Any) -> Any:
        return [] if n == 0 else None

    def clear(self) -> None:
        self.blocks.clear()

    def on_request_finished(self, key_groups: Any, insertion_only_keys: Any,
                            reused_keys: Any, req_context: Any) -> None:
        pass


class R9AndR10(R9):
    """vLLM 0.33.0's shape with its own finish: fits R9 and R10 alike."""

    def on_request_finished(self, key_groups: Any, insertion_only_keys: Any,
                            reused_keys: Any, req_context: Any) -> None:
        pass


def test_r10_is_a_policy_with_the_hooks_and_no_touch() -> None:
    found = detect(R10FromScratch)
    assert (found.api, found.fits) == ("R10", ())
    assert "no touch" in found.reason
    subject = subject_for_class(R10FromScratch)
    assert subject.api == "R10" and not subject.has("touch") and subject.has("hooks")
    assert not hasattr(subject.build(4), "touch")  # the engines' view has none either


def test_a_policy_that_fits_r9_and_r10_is_driven_as_the_profiles_else_the_newest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from policyspec.adapters import revisions as loader

    monkeypatch.setattr(loader, "installed_release", lambda: None)
    found = detect(R9AndR10)
    assert found.fits == ("R10", "R9")
    newest = subject_for_class(R9AndR10)
    assert newest.api == "R10" and not newest.has("touch")
    assert "the newest it fits (no vLLM is installed)" in newest.notes[0]
    assert "--api R9 drives it as vLLM 0.33 does" in newest.notes[0]
    as_profile = subject_for_class(R9AndR10, prefer="R9")
    assert as_profile.api == "R9" and as_profile.has("touch")
    assert "the revision of the profile's vLLM release" in as_profile.notes[0]
    forced = subject_for_class(R9AndR10, api="R9", prefer="R10")
    assert forced.api == "R9" and "forced" in forced.notes[0]


def test_a_policy_that_fits_both_is_driven_as_the_installed_vllms_revision(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from policyspec.adapters import revisions as loader
    from policyspec.releases import release_of

    monkeypatch.setattr(loader, "installed_release", lambda: ("0.33.2", release_of("0.33.2")))
    subject = subject_for_class(R9AndR10)
    assert subject.api == "R9"
    assert "the installed vLLM 0.33.2's revision" in subject.notes[0]


def test_an_r10_policy_gets_r10s_hook_defaults_never_a_touch() -> None:
    """0.34's base class: on_store_miss does nothing (0.33's touched)."""
    policy = subject_for_class(R10FromScratch).build(4)
    policy.insert(b"k", object())
    assert policy.on_store_miss([b"k", b"j"], object()) is None  # type: ignore[attr-defined]
    assert policy.on_request_access([b"k"], object()) is None  # type: ignore[attr-defined]
