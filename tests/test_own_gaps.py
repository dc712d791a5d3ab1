"""policyspec's own gaps are never the policy's fault: a vLLM name or
attribute the stand-ins lack, reached inside any call of any engine (also
under --isolate and with workers), stops every command with exit 2 naming
it; policies deriving from vLLM's in-tree LRU and ARC load and are judged;
record drives a seed-API policy as check does; a constructor that raises
is one line with exit 2 for every command."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

HERE = Path(__file__).parent / "own_gaps"
QUICK = ("--budget", "3", "-q")


def run(*args: str, cwd: Path = HERE) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "policyspec", *args],
        cwd=cwd, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("policyspec: error: "), line
    assert "API-NO-RAISE" not in done.stdout and "verdict" not in done.stdout
    return line


# -- case 1: a gap reached inside a call --------------------------------------

PLACEHOLDER = "vllm.v1.kv_offload.cpu.policies.victims.rank_victims"


@pytest.mark.parametrize("engine", ["stateful", "fast", "manager", "metamorphic", "size"])
def test_a_placeholder_used_in_evict_is_exit_2_naming_it_in_every_engine(engine: str) -> None:
    line = one_line(run("check", "fork_evict_lru.py:ForkEvictLRU", *QUICK,
                        "--engine", engine, "--jobs", "1"))
    assert PLACEHOLDER in line and "--placeholder rank_victims" in line, line
    assert "where vLLM is installed" in line and "fork_evict_lru.py:32: " in line, line


@pytest.mark.parametrize("how", [("--isolate", "--jobs", "1"), ("--jobs", "2")])
def test_a_placeholder_gap_leaves_a_child_or_a_worker_as_exit_2(how: tuple[str, ...]) -> None:
    line = one_line(run("check", "fork_evict_lru.py:ForkEvictLRU", *QUICK, *how))
    assert PLACEHOLDER in line and "--placeholder rank_victims" in line, line


def test_with_the_placeholder_kept_the_fork_is_judged() -> None:
    done = run("check", "fork_evict_lru.py:ForkEvictLRU", *QUICK, "--jobs", "1",
               "--placeholder", "rank_victims")
    assert done.returncode in (0, 1), done.stderr
    assert "holds with placeholders for rank_victims" in done.stdout.splitlines()[-1]


@pytest.mark.parametrize(("cls", "reads", "lacking"), [
    ("SuperHookLRU", "on_evicted", "stand-in CachePolicy"),
    ("ClassConstantLRU", "MAX_EVICT_BATCH", "stand-in CachePolicy"),
    ("ModuleNameLRU", "vllm.v1.kv_offload.cpu.policies.base.forget_block", "do not model"),
])
def test_a_stand_in_lacking_what_a_call_reaches_is_exit_2_naming_it(
    cls: str, reads: str, lacking: str
) -> None:
    for how in (("--jobs", "1"), ("--isolate", "--jobs", "1")):
        line = one_line(run("check", f"standin_attr_lru.py:{cls}", *QUICK, *how))
        assert reads in line and lacking in line and "where vLLM is installed" in line, line


@pytest.mark.parametrize("engine", ["trace", "vllm-manager", "arc-memory", "evict-linear",
                                    "stateful", "fast"])
def test_a_placeholder_used_in_a_request_hook_is_exit_2_in_every_engine(engine: str) -> None:
    line = one_line(run("check", "fork_hook_arc.py:ReportingARC", "--profile", "arc-0.34",
                        *QUICK, "--engine", engine, "--jobs", "1"))
    assert line.startswith("policyspec: error: fork_hook_arc.py:10: on_request_finished uses "
                           "vllm.v1.kv_offload.cpu.policies.arc.report_reuse"), line
    assert "--placeholder report_reuse" in line, line


def test_a_private_field_of_vllms_in_tree_policy_is_named_as_the_stand_ins_gap() -> None:
    line = one_line(run("check", "intree_subclasses.py:HeapPeekLRU", *QUICK, "--jobs", "1"))
    assert "evict reads _heap, which policyspec's stand-in LRUCachePolicy" in line, line


def test_a_gap_stops_prove_with_its_line() -> None:
    done = run("prove", "fork_evict_lru.py:ForkEvictLRU", "--profile", "core", "--only", "get",
               "-q")
    assert done.returncode == 2, (done.stdout[-2000:], done.stderr[-2000:])
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("policyspec: error: fork_evict_lru.py:32: evict uses "
                           f"{PLACEHOLDER}"), line
    assert "ERROR" not in done.stdout


def test_a_gap_stops_simulate_and_record_too(tmp_path: Path) -> None:
    line = one_line(run("record", str(HERE / "fork_evict_lru.py:ForkEvictLRU"),
                        "--out", str(tmp_path / "h.jsonl"), "--calls", "2000", cwd=tmp_path))
    assert PLACEHOLDER in line
    line = one_line(run("simulate", str(HERE / "standin_attr_lru.py:ClassConstantLRU"),
                        "--requests", "200", "-q", cwd=tmp_path))
    assert "MAX_EVICT_BATCH" in line


# -- case 2: in-tree policies and names the stand-ins lack --------------------

@pytest.mark.parametrize(("target", "profile"), [
    ("PlainLRU", "lru-0.34"), ("PlainLRU", "lru-0.33"),
    ("LoggedARC", "arc-0.34"), ("LoggedARC", "arc"),
])
def test_a_subclass_of_an_in_tree_policy_loads_and_passes(target: str, profile: str) -> None:
    done = run("check", f"intree_subclasses.py:{target}", "--profile", profile, *QUICK,
               "--jobs", "1")
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr)
    assert done.stdout.splitlines()[-1] == "verdict: PASS"


def test_the_in_tree_lru_stand_in_follows_the_release_it_is_driven_as() -> None:
    from policyspec.adapters import load_subject
    from policyspec.adapters.seed import unwrap

    subject = load_subject(f"{HERE}/intree_subclasses.py:PlainLRU")
    assert subject.fits == ("R10", "R9")
    as_033, as_034 = subject.fitted("R9"), subject.fitted("R10")
    assert as_033.has("touch") and not as_034.has("touch")
    moved = []
    for driven in (as_033, as_034):
        policy = driven.build(4)
        keys = [driven.make_key(i) for i in range(3)]
        for i, key in enumerate(keys):
            policy.insert(key, driven.make_block(0, i))
        lru = unwrap(policy)
        before = dict(lru.ranks)  # type: ignore[attr-defined]
        policy.on_store_miss([keys[0]], policy.req_context)  # type: ignore[attr-defined]
        moved.append(lru.ranks != before)  # type: ignore[attr-defined]
        # A driver calling the policy itself (the emulated manager) sees the
        # same default.
        before = dict(lru.ranks)  # type: ignore[attr-defined]
        lru.on_store_miss([keys[1]], policy.req_context)  # type: ignore[attr-defined]
        moved.append(lru.ranks != before)  # type: ignore[attr-defined]
    # 0.33.0's base class touches on a store miss, 0.34.0's does nothing.
    assert moved == [True, True, False, False]


def test_a_base_the_stand_ins_lack_is_named_with_the_remedy() -> None:
    line = one_line(run("check", "unknown_base.py:TunedSLRU", *QUICK))
    assert "vllm.v1.kv_offload.cpu.policies.lru.SegmentedLRUCachePolicy" in line, line
    assert "do not model" in line and "where vLLM is installed" in line, line


def test_a_missing_package_is_one_line_naming_it_and_the_remedy() -> None:
    line = one_line(run("check", "missing_package.py:NeedsPackage", *QUICK))
    assert "'numpy_foo_policyspec_absent', which is not installed" in line, line
    assert "install it where policyspec runs" in line, line


# -- case 3: record drives as check does -------------------------------------

def test_record_drives_a_seed_api_policy_as_check_does(tmp_path: Path) -> None:
    out = tmp_path / "h.jsonl"
    done = run("record", str(HERE / "seed_lru.py:SeedLRU"), "--out", str(out),
               "--calls", "3000", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "stopped" not in done.stderr
    assert '"api":"R3"' in out.read_text().splitlines()[0]
    judged = run("check-history", str(out), cwd=tmp_path)
    assert "core: conforms" in judged.stdout, judged.stdout


def test_the_guard_and_check_choose_with_one_function() -> None:
    from policyspec.adapters import load_subject
    from policyspec.guard import GuardPolicy
    from policyspec.vllm.standins import installed

    for target in ("seed_lru.py:SeedLRU", "intree_subclasses.py:PlainLRU"):
        with installed():
            subject = load_subject(f"{HERE}/{target}")
            guard = GuardPolicy(8, target=f"{HERE}/{target}", history=os.devnull)
            guard.close()
        assert guard.api == subject.api, target


def test_the_guard_refuses_a_revision_it_cannot_drive(tmp_path: Path) -> None:
    policy = tmp_path / "sessions.py"
    policy.write_text(
        "class R7bPolicy:\n"
        "    def __init__(self, cache_capacity): self.b = {}\n"
        "    def get(self, key): return self.b.get(key)\n"
        "    def insert(self, key, block): self.b[key] = block\n"
        "    def remove(self, key): del self.b[key]\n"
        "    def touch(self, keys): pass\n"
        "    def evict(self, n, protected, deprioritized): return None\n"
    )
    line = one_line(run("record", f"{policy}:R7bPolicy", "--out", str(tmp_path / "h.jsonl"),
                        cwd=tmp_path))
    assert "API revision R7b" in line and "cannot drive it" in line, line


# -- case 4: a constructor that raises ---------------------------------------

@pytest.mark.parametrize(("cls", "raised"), [
    ("SettingsLRU", "FileNotFoundError"), ("ValueLRU", "ValueError: cache_capacity must be"),
    ("TypeErrorLRU", "TypeError: unsupported operand"), ("ExitLRU", "SystemExit: no GPU"),
])
def test_a_constructor_that_raises_is_one_line_for_every_command(
    cls: str, raised: str, tmp_path: Path
) -> None:
    target = str(HERE / f"raising_constructor.py:{cls}")
    for args in (
        ("check", target, *QUICK),
        ("record", target, "--out", str(tmp_path / "h.jsonl"), "--calls", "100"),
        ("simulate", target, "--requests", "50", "-q"),
        ("prove", target, "--profile", "core"),
    ):
        line = one_line(run(*args, cwd=tmp_path))
        assert f"{cls}(cache_capacity=4) raised {raised}" in line, (args[0], line)


# -- the class of errors: policyspec's gaps, and the policy's faults ------------

def _raised(call: Callable[[], object]) -> BaseException:
    try:
        call()
    except Exception as exc:  # what the engines see
        return exc
    raise AssertionError("the call returned")


def test_only_what_the_stand_ins_lack_is_a_gap() -> None:
    from policyspec.vllm.standins import installed
    from policyspec.vllm.standins.gaps import gap_of
    from policyspec.vllm.standins.intree import LRUCachePolicy
    from policyspec.vllm.standins.keys import ReqContext
    from policyspec.vllm.standins.policies import CachePolicy, ChunkStatus

    class Mine(LRUCachePolicy):
        def hook(self) -> object:
            return super().vllm_only_hook  # type: ignore[misc]

    class Plain:
        def __init__(self) -> None:
            self.blocks: dict[int, int] = {}

    with installed() as record:
        assert record is not None
        import vllm.v1.kv_offload.cpu.policies.base as base  # type: ignore[import-not-found]

        record.arm()
        gaps = {
            "armed placeholder": _raised(lambda: base.fork_helper()),
            "stand-in class attribute": _raised(lambda: CachePolicy.MAX_BATCH),  # type: ignore[attr-defined]
            "super() into a stand-in": _raised(lambda: Mine(4).hook()),
            "a field ReqContext leaves out": _raised(lambda: ReqContext("r").load_tier_filter),  # type: ignore[attr-defined]
            "a private field of vLLM's LRU": _raised(lambda: Mine(4)._heap),  # type: ignore[attr-defined]
        }
        faults = {
            "a field vLLM's ChunkStatus lacks too": _raised(lambda: ChunkStatus(1).block_id),  # type: ignore[attr-defined]
            "a field vLLM's ReqContext lacks too": _raised(lambda: ReqContext("r").priority),  # type: ignore[attr-defined]
            "the policy's own attribute": _raised(lambda: Plain().blcoks),  # type: ignore[attr-defined]
            "a KeyError": _raised(lambda: Plain().blocks[3]),
            "an AttributeError raised by hand": _raised(lambda: (_ for _ in ()).throw(
                AttributeError("custom"))),
        }
    for what, exc in gaps.items():
        assert gap_of(exc) is not None, what
    for what, exc in faults.items():
        assert gap_of(exc) is None, what
