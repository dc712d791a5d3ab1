"""How a trace is printed (policyspec/steps.py): a size fault's hundreds of
stores read as one line that keeps the step numbers, and the failing step
stands alone."""

from __future__ import annotations

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


def test_short_runs_gaps_and_the_failing_step_are_printed_one_by_one() -> None:
    short = [f"insert key {k} (idle, ref_cnt 0)" for k in range(MIN_RUN - 1)] + ["get key 0"]
    assert numbered(short) == [f"{i + 1}. {step}" for i, step in enumerate(short)]
    gap = [f"remove key {k}" for k in (0, 1, 2, 4, 5)]  # 3 is missing: no run of MIN_RUN
    assert numbered(gap) == [f"{i + 1}. {step}" for i, step in enumerate(gap)]
    # The run stops before the last step even when that step continues it.
    ending = [f"remove key {k}" for k in range(MIN_RUN + 1)]
    assert numbered(ending) == [f"1-{MIN_RUN}. for k = 0 to {MIN_RUN - 1}: remove key k",
                                f"{MIN_RUN + 1}. remove key {MIN_RUN}"]
