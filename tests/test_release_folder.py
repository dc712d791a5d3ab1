"""Following a vLLM release is adding one folder (policyspec.releases):
a made-up vLLM 0.35.0 whose revision R11 is R10 plus one hook,
``on_request_preempted``, is added as a folder outside the package, put on
the discovery path by ``POLICYSPEC_RELEASES``, and ``new``, ``check``,
``drift``, ``simulate`` and ``record``'s manager follow it. Its
``manager.py`` says when its manager calls the new hook; the check's engines
then drive and judge that hook as an observation hook.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from drift_trees import write_tree

from policyspec.releases import RELEASES, Release, discover

HOOK = "on_request_preempted"

RELEASE_PY = textwrap.dedent(f'''\
    from policyspec.releases import Release

    RELEASE = Release(
        version="0.35.0",
        revision="R11",
        summary="made-up vLLM 0.35.0: + {HOOK}",
        methods=(
            ("get(key)", "core"),
            ("insert(key, chunk, req_context)", "core"),
            ("remove(key)", "core"),
            ("evict(n, protected)", "core"),
            ("clear()", "abstract"),
            ("mark_evictable(key)", "hook"),
            ("mark_non_evictable(key)", "hook"),
            ("on_store_miss(keys, req_context)", "hook"),
            ("on_request_access(keys, req_context)", "hook"),
            ("on_request_finished(key_groups, insertion_only_keys, reused_keys, req_context)",
             "abstract"),
            ("{HOOK}(keys, req_context)", "hook"),
        ),
        evidence=("{HOOK}",),
        manager_touches=False,
        counts_once=True,
    )
    ''')


MANAGER_PY = textwrap.dedent(f'''\
    """vLLM 0.35.0's manager (made up): 0.34.0's, and {HOOK}.

    When a request finishes, right before on_request_finished, the made-up
    manager hands the policy every key the request met, in the order met:
    {HOOK}(keys, req_context). The emulation has no preemption of its
    own, so the finish stands for the last moment a preempted request is
    seen.
    """

    from policyspec.vllm.manager import OffloadingManagerEmulation, RequestCacheAccess


    class Manager(OffloadingManagerEmulation):
        def on_request_finished(self, req_context):
            record = req_context.get_state(RequestCacheAccess)
            if record is not None and self._is_current(record) and not record.finished:
                keys = [k for i in sorted(record.key_groups) for k in record.key_groups[i]]
                if keys:
                    self.call_hook("{HOOK}", keys, req_context)
            super().on_request_finished(req_context)
    ''')

HOOKED_PY = textwrap.dedent(f'''\
    """R11 policies: vLLM 0.34's LRU plus {HOOK}, right and wrong."""

    import atexit
    import os

    from policyspec.reference.lru034 import LRU034CachePolicy

    CALLS = []
    # (appended: a run may load this module more than once)
    atexit.register(lambda: open(os.environ["HOOK_CALLS"], "a").write(f"{{len(CALLS)}}\\n"))


    class Good(LRU034CachePolicy):
        """Counts the calls; a malformed one raises."""

        def {HOOK}(self, keys, req_context):
            keys = list(keys)
            assert all(isinstance(k, bytes) for k in keys), keys
            req_context.req_id  # every call comes with its request
            CALLS.append(len(keys))


    class Raising(LRU034CachePolicy):
        def {HOOK}(self, keys, req_context):
            raise RuntimeError("preempted")


    class Dropping(LRU034CachePolicy):
        """Drops the first idle key it is told of."""

        def {HOOK}(self, keys, req_context):
            for key in keys:
                if key in self._idle_keys:
                    self.remove(key)
                    return
    ''')


def run(*args: str, cwd: Path, releases: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "policyspec", *args], cwd=cwd, capture_output=True, text=True,
        timeout=600,
        env={**os.environ, "POLICYSPEC_RELEASES": str(releases),
             "PYTHONPATH": os.pathsep.join(sys.path)},
    )


def python(code: str, cwd: Path, releases: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, capture_output=True, text=True,
        timeout=600,
        env={**os.environ, "POLICYSPEC_RELEASES": str(releases),
             "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def made_up(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory of release folders holding ``v0_35/`` (its release.py
    and manager.py; its signature.json is recorded by the drift test)."""
    root = tmp_path_factory.mktemp("releases")
    (root / "v0_35").mkdir()
    (root / "v0_35" / "release.py").write_text(RELEASE_PY)
    (root / "v0_35" / "manager.py").write_text(MANAGER_PY)
    return root


def test_the_shipped_releases_are_the_package_folders() -> None:
    assert [(r.version, r.revision) for r in RELEASES] == [("0.33.0", "R9"), ("0.34.0", "R10")]
    assert [r.folder.name for r in RELEASES if r.folder] == ["v0_33", "v0_34"]
    assert all(r.signature is not None for r in RELEASES)


def test_discover_takes_more_directories_and_orders_by_version(made_up: Path) -> None:
    found = discover([made_up])
    assert [r.revision for r in found] == ["R9", "R10", "R11"]
    assert found[-1].folder == made_up / "v0_35"
    assert found[-1].evidence == (HOOK,)


@pytest.mark.parametrize(("version", "revision"), [("0.34.5", "R12"), ("0.36.0", "R10")])
def test_two_folders_of_one_series_or_revision_are_refused(
    tmp_path: Path, version: str, revision: str
) -> None:
    (tmp_path / "v_dup").mkdir()
    (tmp_path / "v_dup" / "release.py").write_text(
        "from policyspec.releases import Release\n"
        f"RELEASE = Release(version={version!r}, revision={revision!r})\n")
    with pytest.raises(ValueError, match="v0_34"):
        discover([tmp_path])


def test_a_folder_without_a_release_is_refused_naming_its_file(tmp_path: Path) -> None:
    (tmp_path / "v9").mkdir()
    (tmp_path / "v9" / "release.py").write_text("RELEASE = None\n")
    with pytest.raises(ValueError, match=r"v9/release\.py: defines no RELEASE"):
        discover([tmp_path])
    assert isinstance(RELEASES[0], Release)


def test_detection_table_and_manager_follow_the_folder(made_up: Path, tmp_path: Path) -> None:
    out = python(f'''
        import json
        from policyspec.adapters.revisions import detect
        from policyspec.protocols import REVISIONS
        from policyspec.vllm.manager import RELEASES, OffloadingManagerEmulation
        from policyspec.workload.player import manager_release
        from policyspec.workload.ports import NATIVE
        from policyspec.vllm.standins.intree import LRUCachePolicy, drive_as
        from policyspec.vllm.standins.keys import ReqContext
        from policyspec.vllm.standins.policies import ChunkStatus

        def evicted_after_store_miss(revision):
            """The in-tree LRU's victim after a store miss of its oldest key:
            the oldest again when the base class's default touches nothing."""
            lru = LRUCachePolicy(4)
            drive_as(lru, revision)
            for i, key in enumerate((b"a", b"b")):
                chunk = ChunkStatus(i)
                chunk.ref_cnt = 0
                lru.insert(key, chunk, ReqContext("r"))
            lru.on_store_miss([b"a"], ReqContext("r"))
            return lru.evict(1, set())[0][0].decode()

        class Older:
            def get(self, key): return None
            def insert(self, key, chunk, req_context): return None
            def remove(self, key): return None
            def evict(self, n, protected): return []
            def clear(self): return None

        class Newer(Older):
            def {HOOK}(self, keys, req_context): return None

        found = detect(Newer)
        manager = OffloadingManagerEmulation(Newer(), 4, release="0.35")
        print(json.dumps({{
            "api": found.api, "reason": found.reason, "hooks": found.hooks,
            "older": detect(Older).api, "table": list(REVISIONS)[-3:],
            "method": REVISIONS["R11"].method("{HOOK}").call(),
            "kind": REVISIONS["R11"].method("{HOOK}").kind,
            "managers": RELEASES, "touches": manager.touches,
            "counts_once": manager.counts_once, "player": manager_release("R11"),
            "native": "R11" in NATIVE,
            "lru": [evicted_after_store_miss(r) for r in ("R9", "R10", "R11")],
        }}))
        ''', tmp_path, made_up)
    seen = json.loads(out)
    assert seen["api"] == "R11" and HOOK in seen["reason"], seen
    assert HOOK in seen["hooks"]
    assert seen["older"] == "R10"  # the same class without the hook
    assert seen["table"] == ["R9", "R10", "R11"]
    assert (seen["method"], seen["kind"]) == (f"{HOOK}(keys, req_context)", "hook")
    assert seen["managers"] == ["0.33", "0.34", "0.35"]
    assert (seen["touches"], seen["counts_once"]) == (False, True)
    assert seen["player"] == "0.35.0" and seen["native"]
    assert seen["lru"] == ["b", "a", "a"]  # R11's base, as R10's, does not touch


@pytest.fixture(scope="module")
def starter(made_up: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("starter")
    done = run("new", "mine.py", "--api", "R11", cwd=work, releases=made_up)
    assert done.returncode == 0, done.stderr
    assert "API revision R11" in done.stdout and "vLLM 0.35.0" in done.stdout, done.stdout
    return work / "mine.py"


def test_new_writes_a_starter_with_the_new_hook(starter: Path) -> None:
    source = starter.read_text()
    assert f"def {HOOK}(self, keys: Iterable[Key], req_context: Any) -> None:" in source
    assert "revision R11 (made-up vLLM 0.35.0" in source
    # policyspec spells out no Protocol for R11: mypy checks against vLLM's class.
    assert "CachePolicyR11" not in source


def test_check_detects_and_passes_the_starter(starter: Path, made_up: Path) -> None:
    done = run("check", f"{starter.name}:MinePolicy", "--budget", "3", "--jobs", "1",
               cwd=starter.parent, releases=made_up)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    assert "API R11 (vLLM 0.35.0's manager and API)" in done.stdout
    assert f"API revision R11 detected: it defines {HOOK}" in done.stdout
    assert "played through vLLM 0.35's manager" in done.stdout


def test_the_same_starter_without_the_folder_is_r10(starter: Path, tmp_path: Path) -> None:
    empty = tmp_path / "none"
    empty.mkdir()
    done = run("check", f"{starter.name}:MinePolicy", "--budget", "3", "--jobs", "1",
               cwd=starter.parent, releases=empty)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "API R10 (vLLM 0.34.0's manager and API)" in done.stdout


def test_drift_records_and_then_knows_the_signature(made_up: Path, tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "tree", "0.34", version="0.35.0",
                      extra=f"def {HOOK}(self, keys, req_context):\n    return None\n")
    unknown = run("drift", str(tree), cwd=tmp_path, releases=made_up)
    assert unknown.returncode == 1
    assert f"CachePolicy.{HOOK}(self, keys, req_context) is new" in unknown.stdout
    signature = made_up / "v0_35" / "signature.json"
    recorded = run("drift", str(tree), "--record", "R11", cwd=tmp_path, releases=made_up)
    assert recorded.returncode == 0, recorded.stderr
    assert str(signature) in recorded.stdout and signature.is_file()
    known = run("drift", str(tree), cwd=tmp_path, releases=made_up)
    assert known.returncode == 0, known.stdout
    assert known.stdout.splitlines() == [
        f"policyspec drift: vLLM 0.35.0 ({tree}) is API revision R11, which this "
        "policyspec knows"]
    # Every file the new release needed, measured: the folder's three files.
    assert sorted(p.name for p in (made_up / "v0_35").iterdir()
                  if p.name != "__pycache__") == ["manager.py", "release.py", "signature.json"]


def test_simulate_plays_it_on_its_manager_with_the_newest_references(
    starter: Path, made_up: Path
) -> None:
    report = starter.parent / "simulate.json"
    done = run("simulate", f"{starter.name}:MinePolicy", "--requests", "40", "--capacity",
               "32", "--jobs", "1", "-q", "--json-report", str(report),
               cwd=starter.parent, releases=made_up)
    assert done.returncode == 0, done.stderr[-3000:]
    cells = json.loads(report.read_text())["cells"]
    policies = {cell["policy"] for cell in cells}
    assert policies == {"mine.py:MinePolicy", "reference LRU", "reference ARC"}
    mine = next(cell for cell in cells if cell["policy"] == "mine.py:MinePolicy")
    assert mine["times"]["call_ns_by_method"][HOOK]["calls"] > 0  # manager.py's call
    out = python('''
        from policyspec.workload.simulate import references_for
        print(references_for("R11") == references_for("R10") != references_for("R9"))
        ''', starter.parent, made_up)
    assert out.strip() == "True"


def test_the_folder_manager_calls_the_new_hook_under_traffic(
    made_up: Path, tmp_path: Path
) -> None:
    """When vLLM's manager calls a new hook is behaviour: the folder's
    manager.py says it, and every place that builds 0.35's manager builds
    that class (``emulation``); the older releases keep the base class."""
    out = python(f'''
        import json
        from policyspec.vllm.manager import OffloadingManagerEmulation, emulation
        from policyspec.vllm.traffic import TrafficConfig, drive
        from policyspec.reference import LRU034CachePolicy
        from policyspec.workload.player import manager_class

        calls = []

        class Counting(LRU034CachePolicy):
            def {HOOK}(self, keys, req_context):
                calls.append(("{HOOK}", req_context.req_id, len(list(keys))))
            def on_request_finished(self, groups, only, reused, req_context):
                calls.append(("finished", req_context.req_id, 0))
                super().on_request_finished(groups, only, reused, req_context)

        Manager = emulation("0.35")
        manager = Manager(Counting(8), 8, release="0.35")
        drive(manager, TrafficConfig(seed=1, requests=200, touch=0.0))
        preempted = [i for i, c in enumerate(calls) if c[0] == "{HOOK}"]
        print(json.dumps({{
            "preempted": len(preempted),
            "finished": sum(c[0] == "finished" for c in calls),
            "then_finished": all(calls[i + 1][:2] == ("finished", calls[i][1])
                                 for i in preempted),
            "keys": min((calls[i][2] for i in preempted), default=0),
            "own": Manager is not OffloadingManagerEmulation,
            "older": [emulation(r) is OffloadingManagerEmulation for r in ("0.33", "0.34")],
            "player": manager_class("R11").func is Manager,
        }}))
        ''', tmp_path, made_up)
    seen = json.loads(out)
    assert seen["finished"] > 0 and seen["preempted"] > 0, seen
    assert seen["then_finished"] and seen["keys"] >= 1, seen  # right before the finish
    assert seen["own"] and seen["older"] == [True, True] and seen["player"], seen


@pytest.fixture(scope="module")
def hooked(made_up: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("hooked")
    (work / "hooked.py").write_text(HOOKED_PY)
    return work


def check_json(hooked: Path, made_up: Path, name: str) -> tuple[int, dict[str, Any], int]:
    """``policyspec check hooked.py:<name>`` under the made-up release: its
    exit code, JSON report and the calls of the new hook the policy got."""
    report, calls = hooked / f"{name}.json", hooked / f"{name}.calls"
    done = subprocess.run(
        [sys.executable, "-m", "policyspec", "check", f"hooked.py:{name}", "--budget", "2",
         "--jobs", "1", "-q", "--json-report", str(report)],
        cwd=hooked, capture_output=True, text=True, timeout=600,
        env={**os.environ, "POLICYSPEC_RELEASES": str(made_up), "HOOK_CALLS": str(calls),
             "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert report.is_file(), done.stderr[-3000:]
    return done.returncode, json.loads(report.read_text()), hook_calls(calls)


def hook_calls(path: Path) -> int:
    """The calls of the new hook ``hooked.py``'s policies counted in a run."""
    return sum(int(n) for n in path.read_text().split()) if path.is_file() else 0


@pytest.mark.parametrize(("name", "requirement"), [
    ("Raising", "HOOK-TOTAL"), ("Dropping", "HOOK-KEEPS-MEMBERSHIP"),
])
def test_check_judges_the_new_hook(
    hooked: Path, made_up: Path, name: str, requirement: str
) -> None:
    """A raise in the new hook breaks HOOK-TOTAL, a key it drops
    HOOK-KEEPS-MEMBERSHIP, as in on_request_access: the minimal trace ends
    with the hook's model action, and its snippet calls the hook."""
    code, report, _ = check_json(hooked, made_up, name)
    assert code == 1 and report["api"] == "R11", report["errors"]
    assert [f["requirement"] for f in report["failures"]] == [requirement]
    failure = report["failures"][0]
    last = failure["actions"][-1]
    assert (last["op"], last["name"]) == ("hook", HOOK), failure["actions"]
    assert f"{HOOK}(" in failure["trace"][-1]
    assert f"policy.{HOOK}(" in failure["repro"]
    assert failure["repro_shown"], failure.get("repro_result")


def test_a_correct_r11_policy_passes_with_the_new_hook_called(
    hooked: Path, made_up: Path
) -> None:
    code, report, calls = check_json(hooked, made_up, "Good")
    assert code == 0 and report["verdict"] == "pass", report["failures"]
    assert calls > 0  # the engines called the new hook, and it was judged
    checks = {r["id"]: r for r in report["requirements"]}
    assert checks["HOOK-TOTAL"]["status"] == "pass"
    assert checks["HOOK-KEEPS-MEMBERSHIP"]["status"] == "pass"


def test_the_hook_action_through_the_model_and_the_trace_tools() -> None:
    """``("hook", name, r, keys)``: legal while r is open, with any keys;
    the model does not move; every trace tool reads it."""
    from policyspec.model.actions import is_legal, request_of
    from policyspec.model.step import PRESENCE_REQUIREMENT, ProfileModel
    from policyspec.reports.trace_record import decode_action, encode_action
    from policyspec.witness.minimise import keys_of, renamed, without_key
    from policyspec.witness.render import describe

    hook = ("hook", HOOK, 3, (7, 7, 99))
    model = ProfileModel.fresh(None, 4).after([("insert", 7, 0, 3)])
    assert model.allows(hook) and model.allows(("hook", HOOK, 3, ()))
    after = model.step(hook).model
    assert after.state == model.state and after.requests == model.requests
    finished = model.after([("on_request_finished", 3, ((7,),), frozenset({7}), frozenset())])
    assert not is_legal(finished.state, hook, finished.requests)
    assert PRESENCE_REQUIREMENT["hook"] == "HOOK-KEEPS-MEMBERSHIP"
    assert request_of(hook) == 3
    record = encode_action(hook)
    assert record == {"op": "hook", "name": HOOK, "request": 3, "keys": [7, 7, 99]}
    assert decode_action(record) == hook
    assert describe(hook).startswith(f"request 3: {HOOK}([7, 7, 99])")
    assert keys_of(hook) == (7, 7, 99)
    assert renamed(hook, {7: 0, 99: 1}.__getitem__) == ("hook", HOOK, 3, (0, 0, 1))
    assert without_key((hook,), 7) == (("hook", HOOK, 3, (99,)),)
    assert without_key((("hook", HOOK, 3, (7,)),), 7) == ()


def test_record_hands_the_new_hook_to_the_policy(hooked: Path, made_up: Path) -> None:
    """``record`` drives the guard through the folder's manager: the guard
    hands the new hook to the policy (its history has no record of it yet:
    spec/drift.md)."""
    calls = hooked / "record.calls"
    done = subprocess.run(
        [sys.executable, "-m", "policyspec", "record", "hooked.py:Good", "--out",
         str(hooked / "h.jsonl"), "--calls", "2000"],
        cwd=hooked, capture_output=True, text=True, timeout=600,
        env={**os.environ, "POLICYSPEC_RELEASES": str(made_up), "HOOK_CALLS": str(calls),
             "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "behind vLLM 0.35.0's manager" in done.stdout
    assert hook_calls(calls) > 0
