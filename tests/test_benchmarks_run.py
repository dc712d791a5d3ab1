"""The benchmarks still run against the current engine API (they are not
tests of speed: nothing here is timed). Each measuring function is called
with the smallest sizes and its figures checked for shape only."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from benchmarks.engine_speed import measure_engines
from benchmarks.memory import measure_memory
from policyspec.engines import ENGINES


def test_engine_speed_measures_every_default_engine() -> None:
    speeds = list(measure_engines(0.05, 1, profiles=("core",), exhaustive_depth=2))
    # The engines' rows run on the seed LRU: an engine that needs a
    # capability it lacks (vllm-manager: the request hooks) makes no call.
    idle = [s for s in speeds if _needs_a_capability(s.engine)]
    speeds = [s for s in speeds if not _needs_a_capability(s.engine)]
    assert speeds and all(s.checked and min(s.checked) > 0 and s.calls for s in speeds)
    with_requests = {s.subject for s in speeds if s.engine == "fast+requests"}
    assert with_requests == {"lru@R9", "lru-0.33"}
    assert all(s.calls == [0] for s in idle)


def _needs_a_capability(name: str) -> bool:
    engine = ENGINES.get(name)  # (fast+requests is a row, not an engine)
    return engine is not None and engine.needs is not None


def test_memory_measures_every_default_engine() -> None:
    uses = measure_memory(0.05, 5)
    assert len(uses) >= 4 and all(u.short[0] > 0 and u.long[0] > 0 for u in uses)


def test_the_environment_benchmark_measures_its_three_figures() -> None:
    from benchmarks.environment import clock_reads, fast_overhead, lockstep_overhead

    timed, base, calls = fast_overhead(examples=2, repeats=1)
    assert timed > 0 and base > 0 and calls > 0
    timed, base, calls = lockstep_overhead(repeats=1)
    assert timed > 0 and base > 0 and calls > 0
    assert all(ns > 0 for ns in clock_reads(reads=100, repeats=1))


def test_the_second_thread_benchmark_does_the_same_work_at_every_setting() -> None:
    from benchmarks.second_thread import NEVER, measure
    from policyspec.harness import lockstep

    setting = lockstep.THREAD_EVERY
    figures = [measure(every, 0.02) for every in (2, setting, NEVER)]
    assert len({calls for _, _, calls in figures}) == 1 and figures[0][2] > 0
    assert all(wall > 0 and cpu > 0 for wall, cpu, _ in figures)
    assert setting == lockstep.THREAD_EVERY  # each run puts the setting back


def test_the_detection_curve_counts_calls_to_the_first_sighting() -> None:
    """Found-after in checked calls is the figure no machine changes: a file
    caught is counted with the calls made up to its first sighting."""
    from benchmarks.detection import corpus, measure_detection

    chosen = [f for f in corpus() if f.path.stem == "evict_returns_iterator"]
    curve = next(measure_detection((1.0,), files=chosen))
    (catch,) = curve.catches
    assert catch.caught and catch.found_after_calls is not None and catch.found_after_calls >= 1
    assert curve.found_after_calls() == (catch.found_after_calls, catch.found_after_calls)


def test_the_guard_cost_benchmark_replays_every_variant(tmp_path: Path) -> None:
    from benchmarks.history import guard_cost

    calls, times, _ = guard_cost(40, 64, 1, tmp_path)
    assert calls > 0
    assert set(times) == {"bare", "wrapper", "keep", "flat", "record", "check"}
    assert all(len(seconds) == 1 and seconds[0] > 0 for seconds in times.values())


def test_the_prototype_c_recorder_forwards_and_records_every_call(tmp_path: Path) -> None:
    """benchmarks/crecord.c (``trace_guard --c``) compiles, passes every
    call and result through unchanged, and counts the calls it records."""
    from benchmarks import trace_guard
    from policyspec.reference import LRU033CachePolicy
    from policyspec.vllm.standins.keys import ReqContext

    if not trace_guard.can_compile_c():
        pytest.skip("no C compiler or no Python headers here")
    trace_guard.compile_c(tmp_path)
    sink: list[bytes] = []
    recorder: Any = trace_guard._C["module"].Recorder(LRU033CachePolicy(4), sink.append, 0)
    bare: Any = LRU033CachePolicy(4)
    ctx = ReqContext("r")
    ctx._offload_key_positions.update({b"a": 0, b"b": 1})
    calls = 0
    policy: Any
    for policy in (recorder, bare):
        blocks = {key: SimpleNamespace(ref_cnt=-1, chunk_id=i) for i, key in enumerate(b"abc")}
        policy.on_store_miss([b"a", b"b"], ctx)
        for key, block in blocks.items():
            policy.insert(bytes([key]), block, ctx)
            block.ref_cnt = 0
            policy.mark_evictable(bytes([key]))
        got = [policy.get(b"a"), policy.get(b"z")]
        policy.mark_non_evictable(b"a")
        evicted = policy.evict(1, {b"a"})
        policy.on_request_finished(((b"a", b"b"),), {b"b"}, set(), ctx)
        policy.remove(b"c")
        if policy is recorder:
            calls, first = recorder.records(), (got, evicted)
    assert (got, evicted) == first and got[0] is not None and evicted
    assert calls == 13 and not sink  # buffers go to the sink every 8,192 records


def test_the_step_count_charges_the_busy_time_to_the_requests_running() -> None:
    from itertools import islice

    from benchmarks.step_calls import count_steps
    from policyspec.workload.reader import read_trace
    from policyspec.workload.sample import sample_path

    requests = list(islice(read_trace(sample_path()), 40))
    alone = count_steps(requests, 256, 1)
    # one request at a time: each runs its own decode steps, one per output token
    assert alone.most_running == 1 and alone.mean_running == pytest.approx(1.0)
    assert alone.steps >= sum(r.output_tokens for r in requests)
    assert alone.requests == 40 and alone.calls > 0
    together = count_steps(requests, 256, 8)
    assert 1.0 < together.mean_running <= together.most_running <= 8
    # the same requests overlap: fewer steps, the same order of calls
    assert together.steps < alone.steps
    assert together.calls_per_step > alone.calls_per_step


@pytest.mark.parametrize("units", [0.01, 0.03])
def test_engine_speed_does_the_same_work_every_run(units: float) -> None:
    """Engines get work units, never seconds: two runs of one size make the
    same calls (a clock-bound run would not), and a larger size makes more."""
    rows: list[str] = []
    speeds = measure_engines(units, 2, profiles=("lru",), exhaustive_depth=2,
                             progress=lambda speed: rows.append(speed.engine))
    assert rows == [s.engine for s in speeds]  # each row reported as soon as measured
    for speed in speeds:
        assert len(speed.calls) == 2 and speed.calls[0] == speed.calls[1], speed.engine
    fast_calls = next(s.calls[0] for s in speeds if s.engine == "fast")
    bigger = measure_engines(units * 4, 1, profiles=("lru",), exhaustive_depth=2)
    assert next(s.calls[0] for s in bigger if s.engine == "fast") > fast_calls


def test_the_cost_split_charges_each_step_its_share() -> None:
    from benchmarks.cost_split import format_split, split_cost

    def busy(n: int) -> int:
        return sum(i * i for i in range(n))

    shares = split_cost(lambda: [busy(20_000) for _ in range(5)],
                        [("this file", ("test_benchmarks_run.py",))])
    assert set(shares) == {"this file", "other"}
    assert shares["this file"] > 0.5 and sum(shares.values()) == pytest.approx(1.0)
    assert format_split(shares).startswith("this file ")


SECTION_ROWS = {
    "engines": ("1. Checked calls", "   fast           lru       lru ", "fast, core: ratio "),
    "budgets": ("2. What each --budget", "   0.2 units "),
    "lru": ("3. Reference LRU", "   process 1: reference"),
    "memory": ("4. Peak memory", "   fast engine, 2 vs 20 examples"),
    "jobs": ("5. --jobs 1 against", "   --jobs 1: ", "   --jobs 2: "),
    "detection": ("6. Detection", "   0.2 units   1/1 "),
    "prove": ("7. policyspec prove", "   v01_ignores_protected ", "   found "),
    "simulate": ("8. policyspec simulate's", "   reference LRU ", "       split: "),
    "grid": ("9. The 3 x 3 grid", "   9 cells of 30 requests", "   split (the median run"),
}


@pytest.mark.slow
def test_every_section_prints_its_rows_at_the_tiny_size(
    capsys: pytest.CaptureFixture[str]
) -> None:
    """``python -m benchmarks --tiny`` runs every section and each prints
    its rows (no figure is judged: the machine may be busy)."""
    from benchmarks.__main__ import SECTIONS, main

    assert set(SECTION_ROWS) == set(SECTIONS)
    assert main(["--tiny"]) == 0
    out = capsys.readouterr().out
    for section, rows in SECTION_ROWS.items():
        for row in rows:
            assert row in out, f"{section}: no {row!r}"
    assert "ratio" in out.split("8. ")[1] and " calls  simulate " in out


@pytest.mark.parametrize("argv", [["--trace", "/nonexistent/conversation_trace.jsonl"],
                                  ["--only", "grid", "--trace", "/"]])
def test_a_missing_trace_stops_with_one_line_saying_how_to_get_it(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks.__main__ import main
    from benchmarks.trace_speed import DOWNLOAD
    from benchmarks.trace_speed import main as trace_main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and DOWNLOAD in err and not capsys.readouterr().out
    assert trace_main(argv[-2:]) == 2
    assert DOWNLOAD in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--units", "0"], ["--repeats", "0"], ["--units", "-1"]])
def test_bad_sizes_are_refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.__main__ import main

    assert main(argv) == 2
    assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.parametrize(("size", "requests"), [(256, 20), (4096, 45)])
def test_simulate_is_replayed_on_exactly_the_calls_its_cell_made(size: int, requests: int) -> None:
    """Raw replay is of the very calls a simulate cell makes: the recording
    is checked against the cell's own count at every size and length (a
    mismatch raises), for every policy of the grid."""
    from benchmarks.trace_speed import simulate_speeds, trace_path

    trace, users = trace_path(None)
    speeds = simulate_speeds(trace, size, requests, 2)
    assert not users and len(speeds) == 3
    for speed in speeds:
        assert speed.calls > requests and len(speed.simulate) == len(speed.raw) == 2
        assert speed.ratio > 0 and speed.split["policy calls"] > 0
