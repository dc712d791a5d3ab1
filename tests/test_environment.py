"""Time and randomness are inputs: a policy checked by
policyspec reads a virtual clock the engines drive and draws from a random
stream seeded per instance, in every engine and under ``--isolate``; every
replay of a trace sees what the run that found it saw, so no MUST is n/a
because a policy reads the clock or draws random numbers; a failure only a
step back of the wall clock makes is API-CLOCK-STEP-BACK (a SHOULD)."""

from __future__ import annotations

import datetime
import json
import random
import sys
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import jsonschema
import pytest

from policyspec.environment import (
    MONOTONIC_START,
    WALL_START,
    LocalEnvironment,
    active,
    controlled,
)
from policyspec.harness import Lockstep
from policyspec.harness.snapshot import fork
from policyspec.options import CheckOptions
from policyspec.profiles import get_profile
from policyspec.reference.lru import LRUCachePolicy
from policyspec.registry import spec_dir
from policyspec.reports.html.run_page import render_run_page
from policyspec.reports.report import NA, NOT_TESTED, Report, dumps
from policyspec.reports.verdict import unjudged_musts
from policyspec.session import check_target
from policyspec.subject import subject_from_class
from policyspec.witness.render import describe, repro

HERE = Path(__file__).parent
SCORER = f"{HERE / 'correct' / 'clock_value_scorer.py'}:Policy"
RESTAMPS = f"{HERE / 'faulty' / 'clock_failed_evict_restamps.py'}:Policy"
TTL = f"{HERE / 'faulty' / 'ttl_raises_on_clock_step_back.py'}:Policy"
CORE = get_profile("core")


class Reads(LRUCachePolicy[Any, Any]):
    """The reference LRU, noting what it reads of the world on every touch."""

    seen: ClassVar[list[tuple[Any, ...]]] = []

    def touch(self, keys: Any) -> None:
        from time import monotonic  # as a module that imported it would

        Reads.seen.append((time.time(), time.time_ns(), monotonic(), time.perf_counter_ns(),
                           datetime.datetime.now(), datetime.datetime.utcnow(),
                           random.random(), random.Random().random()))
        super().touch(keys)


@pytest.fixture
def reads() -> Iterator[list[tuple[Any, ...]]]:
    Reads.seen = []
    yield Reads.seen


def test_a_policy_reads_the_virtual_clock_and_a_seeded_stream(
        reads: list[tuple[Any, ...]]) -> None:
    subject = subject_from_class(Reads)
    with controlled(seed=5):
        for _ in range(2):  # two fresh instances: the same readings
            harness = Lockstep(subject, CORE, 8)
            harness.run([("touch", (1,)), ("clock", 3_600_000), ("touch", (1,)),
                         ("clock", -60_000), ("touch", (1,))])
            assert harness.environment.read_clock and harness.environment.read_wall_after_back
    first, later, back = reads[:3]
    assert reads[3:] == reads[:3]
    start = WALL_START / 1e9
    assert first[:4] == (start, WALL_START, MONOTONIC_START / 1e9, MONOTONIC_START)
    assert first[4] == datetime.datetime.fromtimestamp(start)
    assert first[5] == datetime.datetime(2025, 1, 1)
    assert later[0] == start + 3600 and later[2] == MONOTONIC_START / 1e9 + 3600
    assert back[0] == start + 3540 and back[2] == later[2]  # the monotonic clock stays
    assert len({row[6] for row in reads[:3]}) == 3  # one stream, going on


def test_policyspec_s_own_code_and_code_outside_a_call_keep_the_real_clock() -> None:
    """During a policy call, code of a policy module reads the virtual clock
    and policyspec's own code (its deadlines, the watchdog) the real one."""
    read = "value = time.monotonic()"
    policy: dict[str, Any] = {"__name__": "my_policies.lru", "time": time}
    ours: dict[str, Any] = {"__name__": "policyspec.engines.fast", "time": time}
    env = LocalEnvironment(0)
    with controlled(0):
        with active(env):
            exec(read, policy)
            exec(read, ours)
        outside: dict[str, Any] = {"__name__": "my_policies.lru", "time": time}
        exec(read, outside)
    assert policy["value"] == MONOTONIC_START / 1e9 and env.read_clock
    assert ours["value"] == pytest.approx(time.monotonic(), abs=60.0)
    assert outside["value"] == pytest.approx(time.monotonic(), abs=60.0)


def test_names_a_module_imported_are_put_back_after_the_run() -> None:
    module = types.ModuleType("policy_module_of_a_test")
    module.monotonic = time.monotonic  # type: ignore[attr-defined]
    module.datetime = datetime.datetime  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    real = time.monotonic
    try:
        with controlled(0):
            assert module.monotonic is time.monotonic is not real  # type: ignore[attr-defined]
            with active(LocalEnvironment(0)):
                assert module.monotonic() == MONOTONIC_START / 1e9  # type: ignore[attr-defined]
                assert module.datetime.now().year == 2025  # type: ignore[attr-defined]
            assert isinstance(datetime.datetime(2020, 1, 1), module.datetime)  # type: ignore[attr-defined]
        assert module.monotonic is time.monotonic  # type: ignore[attr-defined]
        assert module.datetime is datetime.datetime  # type: ignore[attr-defined]
    finally:
        del sys.modules[module.__name__]


def test_each_instance_keeps_its_own_random_stream_and_a_fork_goes_on(
        reads: list[tuple[Any, ...]]) -> None:
    subject = subject_from_class(Reads)
    alone = Lockstep(subject, CORE, 8)
    alone.run([("touch", (1,))] * 3)
    expected = [row[6] for row in reads]
    reads.clear()
    one, two = Lockstep(subject, CORE, 8), Lockstep(subject, CORE, 8)
    for _ in range(3):  # interleaved: each instance still draws its own stream
        one.apply(("touch", (1,)))
        two.apply(("touch", (1,)))
    assert [row[6] for row in reads[::2]] == [row[6] for row in reads[1::2]] == expected
    reads.clear()
    base = Lockstep(subject, CORE, 8)
    base.apply(("touch", (1,)))
    copy = fork(base)
    base.apply(("touch", (1,)))
    copy.apply(("touch", (1,)))
    assert [row[6] for row in reads] == [expected[0], expected[1], expected[1]]


def test_numpy_s_global_generator_is_seeded_per_instance_when_imported(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seeded: list[int] = []
    fake = types.SimpleNamespace(random=types.SimpleNamespace(
        seed=seeded.append, get_state=lambda: ("state", len(seeded)),
        set_state=lambda state: seeded.append(-1)))
    monkeypatch.setitem(sys.modules, "numpy", fake)
    with active(LocalEnvironment(7)), active(LocalEnvironment(8)):
        pass
    assert seeded[:2] == [7, 8]


def test_a_clock_step_reads_as_a_story_and_replays_in_the_snippet() -> None:
    assert describe(("clock", 5)) == "the clock advances 5 ms"
    assert describe(("clock", 3_600_000)) == "the clock jumps forward 1 h"
    assert describe(("clock", -60_000)).startswith("the wall clock steps back 1 min")
    snippet = repro("tests.x:Policy", 4, [("insert", 0, 0), ("clock", -1000), ("get", 0)],
                    seed=9)
    assert "with policy_environment(seed=9) as clock:" in snippet
    assert "    clock.step(-1000)  # the wall clock steps back 1 s" in snippet


# -- checks of clock-reading policies ---------------------------------------------------


def _check(target: str, engines: tuple[str, ...], *, isolate: bool = False, budget: float = 3.0,
           strict: bool = False) -> Report:
    return check_target(target, "core", CheckOptions(
        budget=budget, seed=20240611, jobs=1, isolate=isolate, engines=engines, strict=strict))


def test_a_clock_reading_atomic_policy_passes_core_with_no_must_left_na() -> None:
    report = _check(SCORER, ("stateful", "manager", "metamorphic", "fast"), budget=6.0)
    assert report.verdict == "pass", report.to_text()
    statuses = {s.id: s for s in report.requirements}
    for rid in ("EVICT-ATOMIC", "EVICT-ZERO", "CLEAR-FORGETS-KEYS"):
        assert statuses[rid].status == "pass" and statuses[rid].checks > 0
    assert not [s for s in report.requirements if s.level == "MUST" and s.applies
                and s.status in (NA, NOT_TESTED)]
    assert unjudged_musts(report.requirements) == []
    assert 0 < report.stats["seconds"] < 3600  # the run's own time stays real


def test_the_same_policy_with_a_non_atomic_failed_evict_fails_evict_atomic(
        tmp_path: Path) -> None:
    report = _check(RESTAMPS, ("metamorphic",), budget=6.0)
    [failure] = [f for f in report.failures if f.requirement == "EVICT-ATOMIC"]
    assert report.verdict == "fail"
    assert any(step.startswith("the clock") for step in failure.trace), failure.trace
    # The snippet replays both runs on the same clock: their last evicts
    # answer what the message says the check saw ("gave [0]", "gave [1]").
    gave, wanted = (part.split(";")[0] for part in failure.message.split(" gave ")[1:3])
    with pytest.raises(AssertionError, match=r"^EVICT-ATOMIC: ") as raised:
        exec(compile(failure.repro, "repro", "exec"), {})
    assert str(raised.value).endswith(f"(this run: {gave} against {wanted})"), raised.value


def test_a_ttl_policy_that_raises_when_the_clock_steps_back_is_the_should() -> None:
    report = _check(TTL, ("fast",))
    [failure] = report.failures
    assert (failure.requirement, failure.level) == ("API-CLOCK-STEP-BACK", "SHOULD")
    assert "clock went backwards" in failure.message and "(API-NO-RAISE)" in failure.message
    assert any("steps back" in step for step in failure.trace)
    assert report.verdict != "fail"
    # The clock step as data: in the schema, and drawn in the page's timeline.
    document = json.loads(dumps(report))
    jsonschema.validate(document, json.loads((spec_dir() / "report.schema.json").read_text()))
    assert any(a["op"] == "clock" and a["ms"] < 0 for a in document["failures"][0]["actions"])
    assert "steps back" in render_run_page(report)
    assert _check(TTL, ("fast",), strict=True).verdict == "fail"


def test_under_isolate_the_child_s_clock_is_stepped_too() -> None:
    report = _check(TTL, ("fast",), isolate=True, budget=4.0)
    assert {f.requirement for f in report.failures} == {"API-CLOCK-STEP-BACK"}, report.to_text()
    assert report.errors == []
