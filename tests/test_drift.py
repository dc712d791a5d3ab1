"""``policyspec drift``: a vLLM whose policy interface is a known revision is
named (exit 0), one that differs gets every difference from the nearest
known revision, one line each (exit 1), one that cannot be read is one line
(exit 2). The trees and wheels are our own minimal files
(tests/drift_trees.py); one test reads the real 0.33.0 and 0.34.0 wheels
when they are on disk."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from drift_trees import write_tree, write_wheel

from policyspec.cli import main
from policyspec.protocols import REVISIONS
from policyspec.vllm.drift import (
    judge,
    known_fingerprints,
    open_vllm,
    read_fingerprint,
    record,
)
from policyspec.vllm.drift.known import REVISION_NAME


def drift(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    code = main(["drift", *args])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def test_a_033_tree_is_revision_r9(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = drift(capsys, str(write_tree(tmp_path, "0.33")))
    assert (code, err) == (0, "")
    assert out == [f"policyspec drift: vLLM 0.33.0 ({tmp_path}) is API revision R9, which "
                   "this policyspec knows"]


def test_a_034_tree_is_revision_r10(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = drift(capsys, str(write_tree(tmp_path, "0.34")))
    assert f"vLLM 0.34.0 ({tmp_path}) is API revision R10" in out[0]
    assert code == 0 and len(out) == 1, out


def test_a_recorded_revision_policyspec_cannot_drive_is_exit_1_saying_so(
    tmp_path: Path,
) -> None:
    """A fingerprint recorded before the revision is driven (as R10's was,
    before protocols.REVISIONS had it): the user is told to upgrade."""
    files = open_vllm(str(write_tree(tmp_path, "0.34")))
    drives = {name: revision for name, revision in REVISIONS.items() if name != "R10"}
    outcome = judge(read_fingerprint(files), files.label, known_fingerprints(), drives)
    assert outcome.exit_code == 1 and not outcome.differences
    assert "is API revision R10" in outcome.lines()[0]
    assert "cannot drive yet" in outcome.lines()[0] and "upgrade" in outcome.lines()[1]


def test_the_kv_offload_directory_itself_and_a_later_patch_release_are_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_tree(tmp_path, "0.33", version="0.33.1")
    code, out, _ = drift(capsys, str(tmp_path / "vllm" / "v1" / "kv_offload"))
    assert code == 0
    assert out[0].endswith("is API revision R9, recorded from vLLM 0.33.0, which this "
                           "policyspec knows"), out
    assert "vLLM 0.33.1" in out[0]


def test_a_new_abstract_method_is_exit_1_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = write_tree(tmp_path, "0.34", extra="@abstractmethod\n"
                      "def on_request_started(self, req_context): ...\n")
    code, out, _ = drift(capsys, str(tree))
    assert code == 1
    assert "nearest: R10" in out[0] and "(1 difference):" in out[0], out
    assert out[1] == ("  CachePolicy.on_request_started(self, req_context) is new and "
                      "abstract: every policy must now define it")
    assert out[2].startswith("what to do: ") and len(out) == 3, out


def test_a_changed_evict_signature_is_exit_1_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = write_tree(tmp_path, "0.34", evict="self, n, protected, deprioritized=None")
    code, out, _ = drift(capsys, str(tree))
    assert code == 1
    assert out[1:-1] == ["  CachePolicy.evict now takes (self, n, protected, "
                         "deprioritized=None) (in R10: (self, n, protected))"], out


def test_every_change_of_033_to_034_is_one_line(tmp_path: Path) -> None:
    """0.34.0 judged against R9 alone: what spec/contract.md, R10 lists,
    and the tiering manager's new calls."""
    files = open_vllm(str(write_tree(tmp_path, "0.34")))
    r9 = [f for f in known_fingerprints() if f.revision == "R9"]
    outcome = judge(read_fingerprint(files), files.label, r9, REVISIONS)
    assert outcome.exit_code == 1
    assert [d.message for d in outcome.differences] == [
        "CachePolicy.on_request_finished is now abstract (in R9: a default)",
        "CachePolicy.on_request_finished no longer calls self.touch for each of key_groups "
        "(R9's does)",
        "CachePolicy.on_store_miss no longer calls self.touch (R9's does)",
        "CachePolicy.touch(self, keys, req_context) was removed (in R9 it is abstract)",
        "ReqContext.num_computed_tokens is new (a property)",
        "ReqContext.num_in_flight_tokens is new (a property)",
        "ReqContext.num_prompt_tokens is new (a property)",
        "ReqContext.num_tokens is new (a property)",
        "policy.get is now also called in tiering/manager.py (in R9: in cpu/manager.py)",
        "policy.remove is now also called in tiering/manager.py (in R9: in cpu/manager.py)",
        "the managers no longer call policy.touch (R9's do, in cpu/manager.py)",
    ]


def test_only_the_managers_policy_attribute_counts_as_the_policy(tmp_path: Path) -> None:
    """The tree's tiering module holds another kind of policy in an attribute
    of the same name (as vLLM's backpressure does): its calls are not the
    CachePolicy's."""
    found = read_fingerprint(open_vllm(str(write_tree(tmp_path, "0.33"))))
    assert found.policy_attribute == "CPUOffloadingManager._policy"
    assert "should_store" not in found.manager_calls
    assert found.manager_calls["insert"] == ("cpu/manager.py",)  # through a local alias


def test_a_wheel_file_is_read_with_its_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = write_tree(tmp_path / "src", "0.33", version="9.9.9")
    wheel = write_wheel(tree, tmp_path / "vllm-0.33.0-cp38-abi3-any.whl", "0.33.0")
    code, out, _ = drift(capsys, str(wheel))
    assert code == 0
    assert out == [f"policyspec drift: vLLM 0.33.0 ({wheel}) is API revision R9, which this "
                   "policyspec knows"]


def test_the_importable_vllm_is_read_without_importing_it(tmp_path: Path) -> None:
    """A fake vllm on sys.path whose __init__ raises: drift reads it all the same."""
    write_tree(tmp_path, "0.33")
    done = subprocess.run(
        [sys.executable, "-m", "policyspec", "drift"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (f"policyspec drift: vLLM 0.33.0 (the importable vllm at "
                           f"{tmp_path / 'vllm'}) is API revision R9, which this policyspec "
                           "knows\n")


def test_json_says_the_same(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = write_tree(tmp_path / "tree", "0.34", evict="self, n, protected, deprioritized")
    report = tmp_path / "drift.json"
    code, out, _ = drift(capsys, str(tree), "--json", str(report))
    data = json.loads(report.read_text())
    assert (code, data["exit"], data["status"]) == (1, 1, "drift")
    assert data["schema"] == "policyspec-drift/1"
    assert data["nearest"] == {"revision": "R10", "vllm": "0.34.0"}
    assert data["revision"] is None
    assert [f"  {d['message']}" for d in data["differences"]] == out[1:-1]
    assert data["fingerprint"]["cache_policy"]["evict"]["params"] == [
        "self", "n", "protected", "deprioritized"]


def _unparsable(root: Path) -> Path:
    write_tree(root, "0.33")
    (root / "vllm/v1/kv_offload/cpu/policies/base.py").write_text("class CachePolicy(:\n")
    return root


def _no_manager(root: Path) -> Path:
    write_tree(root, "0.33")
    (root / "vllm/v1/kv_offload/cpu/manager.py").unlink()
    return root


def _not_a_zip(root: Path) -> Path:
    path = root / "vllm-0.33.0-py3-none-any.whl"
    path.write_text("not a zip")
    return path


@pytest.mark.parametrize(("make", "says"), [
    (lambda root: root / "absent", "no such file or directory"),
    (lambda root: root, "no vLLM here"),
    (_unparsable, "cpu/policies/base.py does not parse as Python (line 1"),
    (_no_manager, "vllm/v1/kv_offload/cpu/manager.py is missing"),
    (_not_a_zip, "not a wheel (a zip file)"),
])
def test_what_cannot_be_read_is_exit_2_in_one_line(
    make: object, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert callable(make)
    target = make(tmp_path)
    report = tmp_path / "drift.json"
    code, out, err = drift(capsys, str(target), "--json", str(report))
    assert (code, out) == (2, [])
    assert err.startswith("policyspec: error: ") and err.count("\n") == 1, err
    assert says in err, err
    data = json.loads(report.read_text())
    assert (data["status"], data["exit"]) == ("unreadable", 2)
    assert data["error"] in err


def test_no_importable_vllm_is_exit_2(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c",
         "import importlib.util, sys; assert importlib.util.find_spec('vllm') is None; "
         "from policyspec.cli import main; sys.exit(main(['drift']))"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )
    if "AssertionError" in done.stderr:
        pytest.skip("a vllm is importable in this environment")
    assert done.returncode == 2
    assert done.stderr == ("policyspec: error: no importable vllm here (give a vLLM wheel "
                           "file or a source tree: policyspec drift PATH)\n")


def test_record_stores_a_fingerprint_that_reads_back_equal(tmp_path: Path) -> None:
    found = read_fingerprint(open_vllm(str(write_tree(tmp_path / "tree", "0.33"))))
    path = record(found, "R99", tmp_path / "known")
    [stored] = known_fingerprints(tmp_path / "known")
    assert path.name == "R99.json" and stored.revision == "R99"
    outcome = judge(found, "tree", [stored], {"R99"})
    assert (outcome.exit_code, outcome.differences) == (0, ())
    with pytest.raises(ValueError, match="R<number>"):
        record(found, "R6-draft", tmp_path / "known")


# -- the stored fingerprints ----------------------------------------------


def _names(params: tuple[str, ...]) -> tuple[str, ...]:
    """Parameter names without ``self`` and the ``/`` and ``*`` markers."""
    out = (p.split("=")[0].lstrip("*") for p in params if p not in ("/", "*"))
    return tuple(p for p in out if p != "self")


@pytest.mark.parametrize("stored", known_fingerprints(), ids=lambda f: f.revision)
def test_stored_fingerprints_agree_with_the_revision_table(stored: object) -> None:
    """Methods, parameters and abstract/default of each stored revision are
    those of policyspec.protocols.REVISIONS (where it has the revision)."""
    from policyspec.vllm.drift import Fingerprint

    assert isinstance(stored, Fingerprint)
    assert REVISION_NAME.fullmatch(stored.revision)
    if stored.revision not in REVISIONS:
        pytest.skip(f"{stored.revision} (vLLM {stored.vllm}) is recorded but not yet in "
                    "policyspec.protocols.REVISIONS")
    revision = REVISIONS[stored.revision]
    assert stored.cache_policy is not None
    methods = {n: m for n, m in stored.cache_policy.items() if n != "__init__"}
    assert sorted(methods) == sorted(m.name for m in revision.methods)
    for spec in revision.methods:
        member = methods[spec.name]
        assert _names(member.params) == spec.params, spec.name
        abstract = member.kind == "abstract method"
        assert abstract == (spec.kind in ("core", "abstract")), spec.name
    assert revision.chunks == (stored.chunk_status is not None)


def test_stored_fingerprints_are_distinct_releases() -> None:
    stored = known_fingerprints()
    assert len({f.revision for f in stored}) == len(stored)
    for older, newer in itertools.pairwise(stored):
        assert judge(newer, "", [older], REVISIONS).differences, (older.revision,
                                                                  newer.revision)


# -- the real wheels -------------------------------------------------------

_WHEELS = Path(os.environ.get("POLICYSPEC_VLLM_WHEELS", "/work/wheels"))


def _wheel(version: str) -> Path:
    found = sorted(_WHEELS.glob(f"vllm-{version}-*.whl"))
    if not found:
        pytest.skip(f"no vllm-{version}-*.whl in {_WHEELS} (set POLICYSPEC_VLLM_WHEELS to a "
                    "directory holding vLLM's wheels)")
    return found[0]


@pytest.mark.parametrize(("version", "revision"), [("0.33.0", "R9"), ("0.34.0", "R10")])
def test_the_real_wheels_are_their_revisions(
    version: str, revision: str, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = _wheel(version)
    code, out, _ = drift(capsys, str(wheel))
    assert out[0].startswith(f"policyspec drift: vLLM {version} ({wheel}) is API revision "
                             f"{revision}"), out
    assert code == (0 if revision in REVISIONS else 1), out


# -- a policy that fits no revision is told to run drift ---------------------


def test_a_policy_that_fits_no_revision_is_told_what_it_has_and_to_run_drift(
    tmp_path: Path,
) -> None:
    """Written for a vLLM whose evict became evict_chunks: no revision fits."""
    from policyspec.adapters import TargetError, load_subject

    path = tmp_path / "renamed.py"
    path.write_text(
        "class Renamed:\n"
        "    def __init__(self, cache_capacity): self.chunks = {}\n"
        "    def get(self, key): return self.chunks.get(key)\n"
        "    def insert(self, key, chunk, req_context): self.chunks[key] = chunk\n"
        "    def remove(self, key): del self.chunks[key]\n"
        "    def on_request_finished(self, key_groups, insertion_only, reused, req_context):\n"
        "        pass\n"
        "    def evict_chunks(self, n, protected): return None\n"
        "    def clear(self): self.chunks.clear()\n"
    )
    with pytest.raises(TargetError) as raised:
        load_subject(f"{path}:Renamed")
    text = str(raised.value)
    assert text.startswith("Renamed lacks ") and "evict" in text.split(", required")[0], text
    assert ("it defines clear, evict_chunks, get, insert, on_request_finished, remove; "
            "the nearest revision policyspec knows is R") in text
    nearest = text.split("nearest revision")[1]
    assert "(it lacks " in nearest and "evict)" in nearest, text
    assert text.endswith("run `policyspec drift` to compare the installed vLLM with the "
                         "revisions policyspec knows")
    assert "\n" not in text


# -- CI's report of the newest vLLM on the registry ------------------------

_CI_DRIFT = Path(__file__).resolve().parent.parent / ".ci" / "drift.sh"


def _ci_drift(links: Path) -> subprocess.CompletedProcess[str]:
    """.ci/drift.sh with pip reading only ``links`` (never a registry)."""
    if not _CI_DRIFT.is_file():
        pytest.skip(f"{_CI_DRIFT} is not here (an installed copy of the tests)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(links), POLICYSPEC_PYTHON=sys.executable,
               PIP_CONFIG_FILE=os.devnull, GITHUB_ACTIONS="",
               PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run(["bash", str(_CI_DRIFT)], capture_output=True, text=True,
                          timeout=300, env=env)


def test_ci_prints_a_drifted_release_in_a_banner_and_does_not_fail(tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "tree", "0.34", extra="@abstractmethod\n"
                      "def on_request_started(self, req_context): ...\n")
    (tmp_path / "links").mkdir()
    write_wheel(tree, tmp_path / "links" / "vllm-0.99.0-py3-none-any.whl", "0.99.0")
    done = _ci_drift(tmp_path / "links")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("#####") and lines[-1].startswith("#####"), lines
    assert lines[1] == ("## vLLM drift: vllm-0.99.0-py3-none-any.whl is not an API revision "
                        "this policyspec drives (not fatal)")
    assert ("##   CachePolicy.on_request_started(self, req_context) is new and abstract: "
            "every policy must now define it") in lines


def test_ci_prints_a_failed_download_and_does_not_fail(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    done = _ci_drift(tmp_path / "empty")
    assert done.returncode == 0, done.stderr
    assert ("## vLLM drift: not checked: downloading the newest vllm wheel failed"
            in done.stdout.splitlines()), done.stdout
