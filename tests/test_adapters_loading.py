"""Loading real policy files: each case gives exit 2 and
one line naming the problem, or works.

Fixtures in tests/loading_fixtures/ are laid out as forks and repositories
lay them out: a fork-only name built in ``__init__``, a package whose policy
imports its siblings, an upstream-style file using ``typing.override``, and
two R0 files of one fork that differ only in parameter names.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from policyspec.adapters import TargetError, load_subject

FIXTURES = Path(__file__).parent / "loading_fixtures"


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "policyspec", "check", *args, "--budget", "quick"],
        cwd=cwd, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, (result.returncode, result.stdout[-2000:], result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "NOT TESTED" not in result.stdout
    return lines[0]


def test_a_fork_only_name_built_in_init_is_exit_2_naming_it_and_its_import() -> None:
    line = one_line(run_cli("stats_lru.py:StatsLRUPolicy", cwd=FIXTURES / "fork_r0"))
    assert line.startswith("policyspec: error: stats_lru.py:12: building "
                           "StatsLRUPolicy(cache_capacity=4) uses PolicyStats"), line
    assert ("imported from vllm.v1.kv_offload.cpu.policies.abstract at stats_lru.py:5"
            in line), line
    assert "does not define it" in line and "a fork's name?" in line


def test_an_unmodelled_module_used_in_init_says_vllm_is_needed(tmp_path: Path) -> None:
    (tmp_path / "tiered.py").write_text(textwrap.dedent("""
        from vllm.config import KVTransferConfig


        class Tiered:
            def __init__(self, cache_capacity):
                self.config = KVTransferConfig()

            def get(self, key): ...
            def insert(self, key, block): ...
            def remove(self, key): ...
            def touch(self, keys): ...
            def evict(self, n, protected): ...
    """))
    line = one_line(run_cli("tiered.py:Tiered", cwd=tmp_path))
    assert "uses KVTransferConfig, imported from vllm.config at tiered.py:2" in line, line
    assert "do not model vllm.config; check the policy where vLLM is installed" in line


def test_a_missing_name_at_construction_is_exit_2_with_its_line(tmp_path: Path) -> None:
    (tmp_path / "typo.py").write_text(textwrap.dedent("""
        class Typo:
            def __init__(self, cache_capacity):
                self.stats = Stats()

            def get(self, key): ...
            def insert(self, key, block): ...
            def remove(self, key): ...
            def touch(self, keys): ...
            def evict(self, n, protected): ...
    """))
    line = one_line(run_cli("typo.py:Typo", cwd=tmp_path))
    assert line == ("policyspec: error: typo.py:4: Typo(cache_capacity=4) cannot be built: "
                    "NameError: name 'Stats' is not defined"), line


def test_a_policy_importing_its_own_package_loads_from_the_repository_root() -> None:
    root = FIXTURES / "repo"
    here = os.getcwd()
    os.chdir(root)
    try:
        subject = load_subject("mypolicies/fifo.py:FIFOPolicy")
    finally:
        os.chdir(here)
    assert subject.build(4).get(b"x") is None
    # The package root comes from the file, not from the working directory.
    assert load_subject(f"{root}/mypolicies/fifo.py:FIFOPolicy").api == "R1"


def test_the_same_package_name_in_another_tree_loads_that_tree(tmp_path: Path) -> None:
    package = tmp_path / "mypolicies"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "common.py").write_text("NAME = 'other tree'\n")
    (package / "fifo.py").write_text(
        (FIXTURES / "repo" / "mypolicies" / "fifo.py").read_text().replace(
            "from mypolicies.common import eligible", "from mypolicies.common import NAME")
        .replace("from . import common", "")
        .replace("assert common.eligible is eligible", "self.name = NAME")
    )
    load_subject(f"{FIXTURES}/repo/mypolicies/fifo.py:FIFOPolicy")
    subject = load_subject(f"{package}/fifo.py:FIFOPolicy")
    built = subject.build(4)
    assert getattr(built, "policy", built).name == "other tree"


def test_a_file_inside_a_vllm_checkout_still_gets_the_stand_ins(tmp_path: Path) -> None:
    policies = tmp_path / "vllm" / "v1" / "kv_offload" / "cpu" / "policies"
    policies.mkdir(parents=True)
    for directory in [tmp_path / "vllm", *policies.relative_to(tmp_path / "vllm").parents]:
        init = tmp_path / "vllm" / directory / "__init__.py"
        init.parent.mkdir(parents=True, exist_ok=True)
        init.write_text("")
    (tmp_path / "vllm" / "__init__.py").write_text("import torch  # a checkout needs torch\n")
    (policies / "__init__.py").write_text("")
    (policies / "fifo.py").write_text(
        (FIXTURES / "repo" / "mypolicies" / "fifo.py").read_text()
        .replace("from mypolicies.common import eligible\n", "")
        .replace("from . import common", "from vllm.v1.kv_offload.cpu.policies.base "
                 "import CachePolicy")
        .replace("class FIFOPolicy:", "class FIFOPolicy(CachePolicy):")
        .replace("        assert common.eligible is eligible\n", "")
        .replace("chosen = eligible(self.blocks, protected)[:n]",
                 "chosen = [(k, b) for k, b in self.blocks.items() if b.ref_cnt == 0 and "
                 "k not in protected][:n]")
    )
    subject = load_subject(f"{policies}/fifo.py:FIFOPolicy")
    assert any("stand-ins" in note for note in subject.notes), subject.notes


def test_typing_override_works_on_every_python() -> None:
    subject = load_subject(f"{FIXTURES}/override_policy.py:OverridePolicy")
    provided = [n for n in subject.notes if "typing.override" in n]
    if sys.version_info < (3, 12):
        assert provided == [
            "Python 3.11 has no typing.override (3.12+): policyspec provided it while loading; "
            "it only marks methods for type checkers"
        ]
        import typing

        assert not hasattr(typing, "override"), "the shim must leave typing as it was"
    else:
        assert provided == []
    assert subject.build(4).get(b"x") is None


@pytest.mark.parametrize("name", ["lru_block_hash", "lru_bh"])
def test_sibling_files_of_one_fork_get_one_revision_named_by_their_import(name: str) -> None:
    subject = load_subject(f"{FIXTURES}/fork_r0/{name}.py:LRUPolicy")
    assert subject.api == "R0"
    assert subject.notes[0] == (
        "API revision R0 detected: it has the six original methods and its CachePolicy comes "
        "from vllm.v1.kv_offload.cpu.policies.abstract"
    )


def test_the_fork_only_name_is_a_target_error_through_the_library_too() -> None:
    with pytest.raises(TargetError, match="uses PolicyStats"):
        load_subject(f"{FIXTURES}/fork_r0/stats_lru.py:StatsLRUPolicy")
