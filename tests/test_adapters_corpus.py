"""The vLLM-style policy corpus loads without vLLM, at the right revision, and
behaves as its docstring says under a short seed-API scenario.

All files are loaded in one child process (``python this_file.py FILES...``)
so that the test really runs without any ``vllm`` module around, and so
that nothing the policy files import leaks into the test process. Whether the
full check catches each faulty file is tested with the check engine.
"""

from __future__ import annotations

import ast
import ctypes
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

CORPUS = Path(__file__).parent / "vllm_corpus"

# file -> (class, revision detected, capabilities)
EXPECTED: dict[str, tuple[str, str, set[str]]] = {
    "rminus1_lru_block_hash.py": ("BlockHashLRUPolicy", "R-1", {"touch"}),
    "r0_fifo_policy.py": ("FIFOCachePolicy", "R0", {"touch"}),
    "r1_lru_policy.py": ("SimpleLRUCachePolicy", "R1", {"touch"}),
    "r3_lru_policy.py": ("IdleListLRUCachePolicy", "R3", {"clear", "mark", "touch"}),
    "r4_lru_req_context.py": ("RequestAwareLRUCachePolicy", "R4", {"clear", "mark", "touch"}),
    "s3fifo_policy_with_spec.py": ("S3FIFOCachePolicy", "R4", {"clear", "touch"}),
    "r6_session_aware_policy.py": ("SessionAwareCachePolicy", "R6", {"clear", "mark", "touch"}),
    "r7_chunk_lru_evict_until.py": (
        "ChunkLRUCachePolicy", "R7", {"clear", "mark", "evict_until", "touch"}
    ),
    "r7b_lru_deprioritized.py": (
        "DeprioritizingLRUCachePolicy", "R7b", {"clear", "mark", "touch"}
    ),
    "r8_mru_policy.py": ("MRUCachePolicy", "R8", {"clear", "mark", "hooks", "touch"}),
    "r9_lru_insert_req_context.py": ("RequestLRUCachePolicy", "R9", {"clear", "hooks", "touch"}),
    "faulty_lru_ignores_protected.py": (
        "CarelessLRUCachePolicy", "R3", {"clear", "mark", "touch"}
    ),
    "faulty_fifo_evicts_in_flight.py": ("SpeculativeFIFOCachePolicy", "R1", {"touch"}),
    "faulty_touch_crashes_on_not_ready.py": ("TwoQueueCachePolicy", "R4", {"clear", "touch"}),
    "r10_fifo_request_finish.py": ("SecondChanceFIFOCachePolicy", "R10", {"clear", "hooks"}),
    "faulty_insert_needs_key_position.py": (
        "PositionRankedLRUCachePolicy", "R9", {"clear", "hooks", "touch"}
    ),
}


def verdict_of(path: Path) -> str | None:
    """The docstring's verdict: "correct" or the requirement id after "faulty:"."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    if doc.startswith("correct"):
        return "correct"
    match = re.match(r"faulty: ([A-Z][A-Z0-9-]+)", doc)
    return match.group(1) if match else None


# -- the child process -------------------------------------------------------


class _Abort(Exception):
    pass


def drive(subject: Any) -> list[str]:
    """Seed-API calls any conforming policy survives; returns violations as
    "REQUIREMENT-ID: detail" (stops at the first broken evict or raise)."""
    found: list[str] = []
    policy = subject.build(4)
    mark = subject.has("mark")
    keys = [subject.make_key(i) for i in range(6)]
    blocks: dict[int, Any] = {}
    present: set[int] = set()

    def call(op: str, *args: Any) -> Any:
        try:
            return getattr(policy, op)(*args)
        except Exception as exc:
            req = "TOUCH-TOTAL" if op == "touch" else "API-NO-RAISE"
            found.append(f"{req}: {op} raised {exc!r}")
            raise _Abort from exc

    def set_ref(i: int, ref: int) -> None:
        if mark and ref == 0:
            blocks[i].ref_cnt = 0
            call("mark_evictable", keys[i])
        elif mark and ref > 0:
            call("mark_non_evictable", keys[i])
            blocks[i].ref_cnt = ref
        else:
            blocks[i].ref_cnt = ref

    def check_evict(result: Any, n: int, protected: set[int]) -> list[int] | None:
        idle = {i for i in present if blocks[i].ref_cnt == 0 and i not in protected}
        if result is None:
            if len(idle) >= n:
                found.append(f"EVICT-LIVENESS: evict({n}) gave None, eligible {sorted(idle)}")
            return None
        victims = [keys.index(k) if k in keys else -1 for k, _ in result]
        if len(victims) != n or len(set(victims)) != n:
            found.append(f"EVICT-EXACT-N: evict({n}) returned {victims}")
        for i, (_, block) in zip(victims, result, strict=True):
            if i in protected:
                found.append(f"EVICT-UNPROTECTED: victim {i} was protected")
            elif i not in present or blocks[i].ref_cnt != 0:
                found.append(f"EVICT-IDLE-ONLY: victim {i} was not idle")
            elif block is not blocks[i]:
                found.append(f"EVICT-IDENTITY: victim {i}")
        present.difference_update(victims)
        if found:
            raise _Abort
        return victims

    try:
        for i in range(4):
            blocks[i] = subject.make_block(-1, i)
            call("insert", keys[i], blocks[i])
            present.add(i)
        for i in (1, 2, 3):
            set_ref(i, 0)
        if subject.has("touch"):  # not R10 (vLLM 0.34)
            call("touch", [keys[1], keys[0], keys[5]])
        check_evict(call("evict", 1, {keys[2]}), 1, {2})
        idle = [i for i in sorted(present) if blocks[i].ref_cnt == 0]
        before = {i: call("get", keys[i]) for i in range(6)}
        too_many = check_evict(call("evict", len(idle) + 1, set()), len(idle) + 1, set())
        if too_many is None and {i: call("get", keys[i]) for i in range(6)} != before:
            found.append("EVICT-ATOMIC: a None evict changed presence")
        pinned = idle[0]
        set_ref(pinned, 1)
        check_evict(call("evict", 1, set()), 1, set())
        if call("evict", 0, set()) != []:
            found.append("EVICT-ZERO: evict(0) did not return []")
        for i in range(6):
            got = call("get", keys[i])
            if i in present and got is not blocks[i]:
                found.append(f"GET-IDENTITY: get({i})")
            if i not in present and got is not None:
                found.append(f"GET-ABSENT: get({i}) is not None")
        set_ref(pinned, 0)
        if subject.has("evict_until"):
            fits = call("evict_until", lambda chosen: len(chosen) >= 1, set())
            check_evict(fits, 1, set())
        if subject.has("clear"):
            call("clear")
            if any(call("get", keys[i]) is not None for i in range(6)):
                found.append("CLEAR-EMPTIES: a key survived clear()")
    except _Abort:
        pass
    return found


def child(paths: list[str]) -> None:
    import importlib.util

    from policyspec.adapters import load_subject

    assert importlib.util.find_spec("vllm") is None, "this test needs an environment without vLLM"
    out = {}
    for path in paths:
        cls = EXPECTED[Path(path).name][0]
        subject = load_subject(f"{path}:{cls}")
        block = subject.make_block(0, 7)
        out[Path(path).name] = {
            "api": subject.api,
            "capabilities": sorted(subject.capabilities),
            "notes": list(subject.notes),
            "block": [type(block).__name__, [f[0] for f in type(block)._fields_]],
            "block_sizes": [ctypes.sizeof(type(block)), type(block).ref_cnt.size],
            "violations": drive(subject),
        }
    out["_leaked"] = sorted(m for m in sys.modules if m == "vllm" or m.startswith("vllm."))
    print(json.dumps(out))


# -- the tests ---------------------------------------------------------------


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    files = sorted(str(p) for p in CORPUS.glob("*.py"))
    proc = subprocess.run(
        [sys.executable, __file__, *files], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    data: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return data


def test_every_corpus_file_is_listed_with_a_verdict() -> None:
    names = {p.name for p in CORPUS.glob("*.py")}
    assert names == set(EXPECTED)
    from policyspec.registry import load_registry

    registry = load_registry()
    for name in names:
        verdict = verdict_of(CORPUS / name)
        assert verdict == "correct" or verdict in registry, (name, verdict)


def test_loading_leaves_no_vllm_module_behind(results: dict[str, Any]) -> None:
    assert results["_leaked"] == []


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_file_loads_at_its_revision(results: dict[str, Any], name: str) -> None:
    _, api, capabilities = EXPECTED[name]
    got = results[name]
    assert got["api"] == api
    assert set(got["capabilities"]) == capabilities
    assert any(n.startswith(f"API revision {api} detected") for n in got["notes"])
    assert any("stand-ins" in n for n in got["notes"])


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_blocks_have_vllm_layout(results: dict[str, Any], name: str) -> None:
    kind, fields = results[name]["block"]
    if EXPECTED[name][1] in ("R7", "R7b", "R8", "R9", "R10"):
        assert (kind, fields) == ("ChunkStatus", ["ref_cnt", "chunk_id"])
    else:
        assert (kind, fields) == ("BlockStatus", ["ref_cnt", "block_id"])
    assert results[name]["block_sizes"] == [16, 4]  # int32 ref_cnt, int64 id, aligned


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_file_behaves_as_its_docstring_says(results: dict[str, Any], name: str) -> None:
    verdict = verdict_of(CORPUS / name)
    violations = results[name]["violations"]
    if verdict == "correct":
        assert violations == []
    else:
        assert verdict in {v.split(":")[0] for v in violations}, violations


def test_placeholders_of_the_s3fifo_file_are_listed(results: dict[str, Any]) -> None:
    notes = " ".join(results["s3fifo_policy_with_spec.py"]["notes"])
    assert "vllm.v1.kv_offload.cpu.spec.CPUOffloadingSpec" in notes
    assert "vllm.v1.kv_offload.cpu.manager" in notes


if __name__ == "__main__":
    child(sys.argv[1:])
