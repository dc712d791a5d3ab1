"""The line protocol: a Node.js policy checked and replayed like a Python
one, its faulty variant rejected, and every child process reaped, also
when it hangs, crashes or talks nonsense."""

from __future__ import annotations

import gc
import shlex
import shutil
import sys
import time
from pathlib import Path

import pytest

from policyspec.cli import main
from policyspec.harness import Lockstep
from policyspec.harness.watchdog import CallTimeout
from policyspec.lineproto import ChildError, ExecTarget, PolicyError
from policyspec.profiles import get_profile

ROOT = Path(__file__).resolve().parents[1]
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed")
VECTORS = str(ROOT / "conformance" / "vectors")


@pytest.fixture
def examples(tmp_path: Path) -> Path:
    """The Node examples copied to a private directory, so that a leftover
    process of this test can be told from any other."""
    target = tmp_path / "node"
    shutil.copytree(ROOT / "examples" / "node", target)
    return target


def node(path: Path) -> str:
    return f"{shlex.quote(str(NODE))} {shlex.quote(str(path))}"


def settled(marker: Path, seconds: float = 5.0) -> list[int]:
    """``running(marker)`` once the processes have had ``seconds`` to end:
    a policy's process ends when its last reference goes (collected with
    the run's cycles, then reaped), which on a loaded machine can trail
    the check's return."""
    deadline = time.monotonic() + seconds
    while (found := running(marker)) and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.1)
    return found


def running(marker: Path) -> list[int]:
    """Pids of live processes whose command line names ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().split(")")[-1].split()[0]
        except OSError:
            continue
        if str(marker).encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def python_child(tmp_path: Path, body: str) -> str:
    """A child in Python that answers hello and create, then runs ``body``
    for every other request (``message`` is the request)."""
    script = tmp_path / "child.py"
    script.write_text(
        "import json, sys, time\n"
        "for line in sys.stdin:\n"
        "    message = json.loads(line)\n"
        "    if message['op'] in ('hello', 'create'):\n"
        "        print(json.dumps({'ok': True, 'protocol': 1}), flush=True)\n"
        "        continue\n"
        + "".join(f"    {ln}\n" for ln in body.splitlines())
    )
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


# -- the runner side ----------------------------------------------------------------------


@needs_node
def test_blocks_come_back_as_the_very_objects_inserted(examples: Path) -> None:
    with ExecTarget(node(examples / "lru.js"), keys="hex") as target:
        assert target.subject.capabilities == {"clear", "mark", "touch"}
        policy = target.subject.build(4)
        key = target.subject.make_key
        block = target.subject.make_block(-1, 7)
        policy.insert(key(1), block)
        block.ref_cnt = 0  # the manager's write travels as set_ref
        policy.mark_evictable(key(1))
        assert policy.get(key(1)) is block
        assert policy.evict(1, set()) == [(key(1), block)]
        assert policy.get(key(1)) is None
        with pytest.raises(PolicyError, match="KeyError") as raised:
            policy.remove(key(5))
        assert isinstance(raised.value, KeyError)  # the seed's strictness carries over


@needs_node
def test_lockstep_drives_a_child_like_a_python_policy(examples: Path) -> None:
    with ExecTarget(node(examples / "lru.js")) as target:
        h = Lockstep(target.subject, get_profile("lru"), 4)
        for action in [("insert", 0, -1), ("finish_store", 0), ("insert", 1, 0),
                       ("touch", (1, 0)), ("start_read", 1), ("evict", 1, frozenset()),
                       ("end_read", 1), ("get", 1)]:
            h.apply(action)
        assert h.state.refs == {1: 0}


@needs_node
def test_a_new_policy_reuses_the_child_and_old_policies_are_refused(examples: Path) -> None:
    with ExecTarget(node(examples / "lru.js")) as target:
        first = target.subject.build(4)
        pid = target.child.proc.pid if target.child.proc else None
        second = target.subject.build(4)
        assert target.child.proc is not None and target.child.proc.pid == pid
        assert second.get(0) is None
        with pytest.raises(ChildError, match="replaced"):
            first.get(0)


@needs_node
def test_closing_reaps_the_child(examples: Path) -> None:
    target = ExecTarget(node(examples / "lru.js"))
    proc = target.child.proc
    assert proc is not None and running(examples)
    target.close()
    assert proc.returncode is not None
    assert settled(examples) == []


def test_a_child_that_hangs_is_timed_out_and_killed(tmp_path: Path) -> None:
    target = ExecTarget(python_child(tmp_path, "time.sleep(60)"), timeout=0.5)
    policy = target.subject.build(4)
    proc = target.child.proc
    # a hang (API-RETURNS), never the child's death that the limit caused
    with pytest.raises(CallTimeout, match="did not answer"):
        policy.get(0)
    assert proc is not None and proc.returncode is not None
    assert running(tmp_path / "child.py") == []
    target.close()


def test_a_child_that_crashes_is_restarted_by_the_next_build(tmp_path: Path) -> None:
    target = ExecTarget(python_child(tmp_path, "sys.exit(3)"))
    policy = target.subject.build(4)
    with pytest.raises(ChildError, match="exited with code 3"):
        policy.get(0)
    target.subject.build(4)  # a fresh child
    assert target.child.alive
    target.close()
    assert running(tmp_path / "child.py") == []


def test_a_line_that_is_not_json_fails_the_call(tmp_path: Path) -> None:
    target = ExecTarget(python_child(tmp_path, "print('hello there', flush=True)"))
    with pytest.raises(ChildError, match="not JSON"):
        target.subject.build(4).get(0)
    target.close()


def test_a_command_that_cannot_start_is_a_usage_error(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--exec", "/nonexistent/policy-binary"]) == 2
    assert "cannot start" in capsys.readouterr().err


def test_check_needs_exactly_one_of_target_and_exec(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check"]) == 2
    assert main(["check", "policyspec.reference:LRUCachePolicy", "--exec", "true"]) == 2
    assert "exactly one" in capsys.readouterr().err


# -- the Node example through the CLI ---------------------------------------------------


@needs_node
def test_check_exec_passes_the_node_lru(
        examples: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", "--exec", node(examples / "lru.js"), "--profile", "lru",
                 "--budget", "quick", "-q"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "verdict: PASS" in out
    assert settled(examples) == []


@needs_node
def test_check_exec_rejects_the_faulty_node_lru(
        examples: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Not the stateful engine: it finds the fault too, but its shrinking
    # replays hundreds of examples through the pipe (minutes under load).
    code = main(["check", "--exec", node(examples / "lru_faulty.js"), "--budget", "quick",
                 "--engine", "metamorphic", "--engine", "manager", "--engine", "exhaustive",
                 "--depth", "3", "--keys", "2", "-q"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "FAIL EVICT-UNPROTECTED" in out
    assert settled(examples) == []


@needs_node
def test_replay_exec_passes_the_node_lru_and_names_the_faulty_cases(
        examples: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", VECTORS, "--exec", node(examples / "lru.js"),
                 "--profile", "lru"]) == 0
    assert "0 failed" in capsys.readouterr().out
    assert main(["replay", VECTORS, "--exec", node(examples / "lru_faulty.js"),
                 "--exec-keys", "hex"]) == 1
    out = capsys.readouterr().out
    assert "V1-protected-key-not-evicted [EVICT-UNPROTECTED]" in out
    assert settled(examples) == []

