"""How a trace is printed (witness/steps.py) and written as a snippet
(witness/render.py): a size fault's hundreds of stores read as one line
that keeps the step numbers, and as loops in the snippet; the failing step
stands alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from policyspec.model.actions import Action
from policyspec.model.state import IDLE, IN_FLIGHT
from policyspec.witness.render import repro, trace_literal
from policyspec.witness.steps import MIN_RUN, numbered


def test_a_run_of_stores_is_one_line_with_its_step_numbers() -> None:
    trace = [f"insert key {k} (idle, ref_cnt 0)" for k in range(257)]
    trace.append("evict(257, protected=[])")
    assert numbered(trace) == [
        "1-257. for k = 0 to 256: insert key k (idle, ref_cnt 0)",
        "258. evict(257, protected=[])",
    ]


def test_pairs_on_one_key_are_told_together() -> None:
    trace = []
    for k in range(3, 9):
        trace += [f"insert key {k} (in flight, ref_cnt -1)", f"store of key {k} completes"]
    trace += ["touch [3]", "evict(1, protected=[])"]
    assert numbered(trace) == [
        "1-12. for k = 3 to 8: insert key k (in flight, ref_cnt -1); store of key k completes",
        "13. touch [3]",
        "14. evict(1, protected=[])",
    ]


def test_short_runs_and_gaps_list_their_keys_and_the_failing_step_stands_alone() -> None:
    short = [f"insert key {k} (idle, ref_cnt 0)" for k in range(MIN_RUN - 1)] + ["get key 0"]
    assert numbered(short) == ["1-3. for k = 0, 1, 2: insert key k (idle, ref_cnt 0)",
                               "4. get key 0"]
    gap = [f"remove key {k}" for k in (0, 1, 2, 4, 5)]  # 3 is missing: no run of MIN_RUN
    assert numbered(gap) == ["1-4. for k = 0, 1, 2, 4: remove key k", "5. remove key 5"]
    # A key twice ends a group: "for k = 1, 1" would hide that it repeats.
    twice = ["get key 1", "get key 1", "touch [1]"]
    assert numbered(twice) == [f"{i + 1}. {step}" for i, step in enumerate(twice)]
    # The run stops before the last step even when that step continues it.
    ending = [f"remove key {k}" for k in range(MIN_RUN + 1)]  # (counting up: "to")
    assert numbered(ending) == [f"1-{MIN_RUN}. for k = 0 to {MIN_RUN - 1}: remove key k",
                                f"{MIN_RUN + 1}. remove key {MIN_RUN}"]


def _ring_trace(slots: int) -> list[Action]:
    """The size ring's witness (tests/faulty/size_ring_of_4096_drops_oldest.py
    at ``slots``): ``slots`` idle stores with one left out, one stored in
    flight, the left-out one stored, then a touch of the first."""
    trace: list[Action] = [("insert", k, IDLE) for k in range(slots) if k != 7]
    trace += [("insert", slots, IN_FLIGHT), ("finish_store", slots), ("insert", 7, IDLE),
              ("touch", (0,))]
    return trace


def test_a_snippet_says_a_long_setup_as_loops_and_still_reproduces(tmp_path: Path) -> None:
    """The snippet of a size fault is as long as its story: the stores are
    ``for`` loops (and the assertion's TRACE comprehensions), yet it runs
    the same calls, so it fails on the faulty policy and passes on the
    reference it breaks."""
    source = Path(__file__).parent / "faulty" / "size_ring_of_4096_drops_oldest.py"
    faulty = tmp_path / "ring.py"
    faulty.write_text(source.read_text().replace("SLOTS = 4096", "SLOTS = 40"))
    trace = _ring_trace(40)
    assert eval(trace_literal(trace)) == trace
    snippet = repro(f"{faulty}:Policy", 64, trace, "", judged=("core", "TOUCH-TOTAL"))
    assert len(snippet.splitlines()) < 40
    assert snippet.count("for k in range(") == 4  # two loops, two comprehensions
    with pytest.raises(ValueError, match="not in deque"):
        exec(compile(snippet, "snippet", "exec"), {})
    fixed = repro("policyspec.reference:LRUCachePolicy", 64, trace, "",
                  judged=("core", "TOUCH-TOTAL"))
    exec(compile(fixed, "snippet", "exec"), {})
