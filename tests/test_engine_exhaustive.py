"""The exhaustive engine runs every legal sequence within its bounds, its
reductions lose nothing, its shards partition the space, and it finds a
needle fault with a sequence of minimal length."""

from __future__ import annotations

import importlib.util
from collections import Counter
from collections.abc import Collection, Iterator
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from policyspec.cli import main
from policyspec.engines import ENGINES
from policyspec.engines.exhaustive import Bounds, candidate_actions, named, run_exhaustive
from policyspec.model import operations as ops
from policyspec.model.actions import Action, expand
from policyspec.model.state import State
from policyspec.profiles import get_profile
from policyspec.reference import LRUCachePolicy
from policyspec.run.context import EngineContext
from policyspec.session import run_check
from policyspec.subject import subject_from_class

SMALL = Bounds(depth=3, keys=2)
LRU = get_profile("lru")
CORE = get_profile("core")
FAULTY = Path(__file__).parent / "faulty"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, FAULTY / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def reference() -> Any:
    return subject_from_class(LRUCachePolicy)


# -- the model-only enumeration the engine must match --------------------------------


def _step(state: State, action: Action) -> State:
    for call in expand(state, action):
        op, args = call[0], call[1:]
        if op == "set_ref":
            state = state.copy()
            state.refs[args[0]] = args[1]
        elif op == "evict":
            state = ops.evict(state, *args)[0]
        elif op != "get":
            state = getattr(ops, op)(state, *args)
    return state


def sequences(bounds: Bounds) -> Iterator[tuple[Action, ...]]:
    """Every legal sequence within ``bounds`` on the model (lru victims)."""

    def walk(state: State, used: int, trace: tuple[Action, ...]) -> Iterator[tuple[Action, ...]]:
        if trace:
            yield trace
        if len(trace) < bounds.depth:
            for action in candidate_actions(state, used, bounds):
                yield from walk(_step(state, action), named(action, used), (*trace, action))

    yield from walk(State(capacity=64), 0, ())


def canonical(trace: tuple[Action, ...]) -> tuple[Action, ...]:
    """Rename keys in order of first use (new keys of one set: lowest first)."""
    names: dict[int, int] = {}

    def name(k: int) -> int:
        return names.setdefault(k, len(names))

    out: list[Action] = []
    for action in trace:
        op = action[0]
        if op == "touch":
            out.append(("touch", tuple(name(k) for k in action[1])))
        elif op == "evict":
            known = {names[k] for k in action[2] if k in names}
            fresh = {name(k) for k in sorted(action[2]) if k not in names}
            out.append(("evict", action[1], frozenset(known | fresh)))
        elif op == "clear":
            out.append(action)
        else:
            out.append((op, name(action[1]), *action[2:]))
    return tuple(out)


# -- tests ---------------------------------------------------------------------------


def test_symmetric_enumeration_has_one_representative_per_renaming_class() -> None:
    full = set(sequences(replace(SMALL, symmetry=False)))
    reduced = set(sequences(SMALL))
    assert reduced <= full
    assert {canonical(t) for t in full} == reduced
    assert len(reduced) < len(full)


def test_every_candidate_is_legal_and_domains_are_bounded() -> None:
    bounds = Bounds(depth=4, keys=3)
    for trace in sequences(bounds):
        for action in trace:
            if action[0] == "touch":
                assert len(action[1]) <= bounds.touch_length
            if action[0] == "evict":
                assert len(action[2]) <= bounds.protected_size
            keys = action[1] if action[0] == "touch" else (
                action[2] if action[0] == "evict" else action[1:2])
            assert all(0 <= k < bounds.keys for k in keys if action[0] != "clear")


def test_reference_lru_passes_and_counts_match_the_model() -> None:
    run = run_exhaustive(EngineContext(reference(), LRU, 0, 0, 64), SMALL)
    assert run.findings == []
    expected = list(sequences(SMALL))
    assert run.counts["sequences"] == len(expected)
    assert run.counts["maximal_sequences"] == sum(len(t) == SMALL.depth for t in expected)
    assert run.counts["model_states"] > 1
    assert any("legal sequences checked" in note for note in run.notes)


def test_copy_and_replay_explore_the_same_space() -> None:
    ctx = EngineContext(reference(), LRU, 0, 0, 64)
    copied = run_exhaustive(ctx, replace(SMALL, strategy="copy"))
    replayed = run_exhaustive(ctx, replace(SMALL, strategy="replay"))
    assert copied.counts == replayed.counts
    assert copied.calls < replayed.calls  # replay pays for every prefix again


def test_a_policy_that_cannot_be_copied_is_replayed() -> None:
    class Uncopyable(LRUCachePolicy[Any, Any]):
        def __deepcopy__(self, memo: dict[int, Any]) -> Any:
            raise TypeError("no copies")

    run = run_exhaustive(EngineContext(subject_from_class(Uncopyable), LRU, 0, 0, 64), SMALL)
    assert run.findings == []
    assert any("replayed" in note for note in run.notes)


@pytest.mark.parametrize("shards", [2, 3])
def test_shards_partition_the_search_space(shards: int) -> None:
    bounds = Bounds(depth=3, keys=3)
    whole = run_exhaustive(EngineContext(reference(), LRU, 0, 0, 64), bounds)
    parts = [run_exhaustive(EngineContext(reference(), LRU, 0, 0, 64, shard=(k, shards)), bounds)
             for k in range(1, shards + 1)]
    for field in ("sequences", "maximal_sequences"):
        assert sum(p.counts[field] for p in parts) == whole.counts[field]
    assert all(p.counts["sequences"] < whole.counts["sequences"] for p in parts)
    # the work of the shared prefixes is counted once (by shard 1), so every
    # count adds up to the unsharded run's
    assert sum(p.calls for p in parts) == whole.calls
    assert sum(p.steps for p in parts) == whole.steps
    assert sum((p.checked for p in parts), Counter()) == whole.checked


def test_needle_fault_is_found_with_a_minimal_sequence() -> None:
    needle = load("exhaustive_third_key_touched_twice")
    subject = subject_from_class(needle.Policy)
    run = run_exhaustive(EngineContext(subject, CORE, 0, 0, 64), Bounds(depth=5, keys=3))
    [finding] = run.findings
    assert finding.requirement == "EVICT-IDLE-ONLY"
    assert finding.shrunk
    assert finding.trace == (
        ("insert", 0, -1), ("insert", 1, -1), ("insert", 2, -1), ("touch", (2, 2)),
        ("evict", 1, frozenset()),
    )
    # Every shorter sequence ran and passed: the search went on at depth <= 4.
    assert run.counts["sequences"] > len(list(sequences(Bounds(depth=3, keys=3))))


class IgnoresProtected(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        return super().evict(n, ())


def test_faulty_policy_is_caught_with_the_reported_culprit() -> None:
    report = run_check(subject_from_class(IgnoresProtected), CORE, engines=["exhaustive"])
    assert report.verdict == "fail"
    assert [f.requirement for f in report.failures] == ["EVICT-UNPROTECTED"]
    assert report.stats["engines"]["exhaustive"]["sequences"] > 0


def test_exhaustive_is_not_a_default_engine() -> None:
    assert ENGINES["exhaustive"].default is False
    assert ENGINES["exhaustive"].shardable


def test_cli_check_takes_depth_and_keys(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", "policyspec.reference:LRUCachePolicy", "--profile", "lru",
                 "--engine", "exhaustive", "--depth", "2", "--keys", "2", "-q"])
    out = capsys.readouterr().out
    # No failure; the MUSTs only other engines exercise stay unjudged (exit 3).
    assert code == 3 and "verdict: UNJUDGED" in out, out
    assert "depth 2, keys 2" in out and "legal sequences checked" in out


def test_cli_depth_without_the_exhaustive_engine_is_a_usage_error(
        capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", "policyspec.reference:LRUCachePolicy", "--depth", "2"])
    assert code == 2
    assert "--engine exhaustive" in capsys.readouterr().err
