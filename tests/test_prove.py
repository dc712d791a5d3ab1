"""`policyspec prove`: the pieces without CrossHair (fast), then CrossHair
itself on the faulty fixtures of tests/prove_fixtures/ (marked crosshair).

The fast part checks the single-step commutation that CrossHair analyses,
concretely: the reference LRU and the fixtures' correct ListLRU commute with
the model on every legal step Hypothesis draws (these properties also run
under the optional ``crosshair`` Hypothesis profile, see spec/prove.md), and
each faulty fixture diverges on a known step under the requirement it
breaks. The CrossHair part keeps to small budgets (CI runs it): a canary
that must find a planted fault, each fixture's fault found through its
abstraction pair, the fallback search, and the model's own contracts.
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from policyspec.cli import main
from policyspec.model.state import State
from policyspec.prove import (
    Abstraction,
    ProofSubject,
    ProveUsageError,
    TargetSpec,
    check_step,
    find_abstraction,
    hypothesis_profile,
    load_proof_subject,
    prove_model,
    prove_target,
    register_abstraction,
)
from policyspec.prove.abstraction import abstraction_from
from policyspec.prove.calls import parse_call
from policyspec.prove.canonical import MAX_KEYS, MAX_LIST, OPERATIONS, decode, legal
from policyspec.prove.crosshair_run import (
    CONFIRMED,
    COUNTEREXAMPLE,
    ERROR,
    MIN_SHARE,
    NOT_CONFIRMED,
    Budget,
    parse_output,
)
from policyspec.prove.findings import model_finding, refinement_finding, trace_finding
from policyspec.prove.run import model_jobs, plan_target
from policyspec.prove.traces import (
    MAX_CHOICE,
    TRACE_KEYS,
    TRACE_STEPS,
    options,
    pick,
    run_choices,
    trace_failure,
)
from policyspec.reference import lru_abstraction
from policyspec.reference.lru import LRUCachePolicy
from policyspec.subject import Block

FIXTURES = Path(__file__).parent / "prove_fixtures"
REFERENCE = "policyspec.reference:LRUCachePolicy"


def fixture(name: str, cls: str = "Policy") -> str:
    return f"{FIXTURES / name}.py:{cls}"


LIST_LRU = fixture("list_lru", "ListLRU")

# (fixture, profile, operation, canonical arguments, requirement broken)
FAULTS = [
    ("ignores_protected", "core", "evict", (1, [], 1, 1, [0]), "EVICT-UNPROTECTED"),
    ("evicts_in_flight", "core", "evict", (0, [-1], 1, 1, []), "EVICT-IDLE-ONLY"),
    ("none_changes_state", "core", "evict", (1, [], 2, 2, []), "EVICT-ATOMIC"),
    ("touch_records_absent", "core", "touch", (0, [], 1, [0]), "TOUCH-KEEPS-MEMBERSHIP"),
    ("remove_drops_neighbour", "core", "remove", (2, [], 2, 0), "REMOVE-DROPS"),
    ("touch_forward", "lru", "touch", (2, [], 2, [0, 1]), "LRU-TOUCH-ORDER"),
    ("mark_at_lru_end", "lru", "mark_evictable", (1, [0], 2, 1), "LRU-MARK-RECENCY"),
]


# -- drawing legal canonical steps -------------------------------------------


@st.composite
def steps(draw: st.DrawFn) -> tuple[str, tuple[Any, ...]]:
    """An operation and canonical arguments that ``legal`` accepts."""
    op = draw(st.sampled_from(OPERATIONS), label="op")
    n_idle = draw(st.integers(0, MAX_KEYS), label="n_idle")
    busy = draw(st.lists(st.sampled_from([-1, 1]), max_size=MAX_KEYS - n_idle), label="busy")
    present = n_idle + len(busy)
    capacity = draw(st.integers(max(present, 1), MAX_KEYS + 1), label="capacity")
    key = st.integers(0, present)
    keys = st.lists(key, max_size=MAX_LIST)
    extra: tuple[Any, ...] = {
        "get": lambda: (draw(key),),
        "insert": lambda: (present, draw(st.sampled_from([-1, 0]))),
        "remove": lambda: (draw(key),),
        "touch": lambda: (draw(keys),),
        "mark_evictable": lambda: (draw(key),),
        "mark_non_evictable": lambda: (draw(key),),
        "evict": lambda: (draw(st.integers(0, present + 1)), sorted(set(draw(keys)))),
        "clear": lambda: (),
    }[op]()
    if op == "mark_evictable" and busy:
        # the key about to be marked is a busy key the manager set to 0
        at = draw(st.integers(0, len(busy) - 1))
        busy = [*busy[:at], 0, *busy[at + 1 :]]
        extra = (n_idle + at,)
    args = (n_idle, busy, capacity, *extra)
    assume(legal(op, *args))
    return op, args


@cache
def _subject(target: str, profile: str) -> ProofSubject:
    return load_proof_subject(TargetSpec(target, profile))


def _commutes(target: str, profile: str, op: str, args: tuple[Any, ...]) -> None:
    subject = _subject(target, profile)
    state, model_args = decode(op, args[0], args[1], args[2], args[3:])
    divergence = check_step(subject, op, state, model_args)
    assert divergence is None, (divergence.requirement, divergence.got, divergence.expected)


@settings(deadline=None)  # the first example loads the policy
@given(step=steps())
def test_every_single_step_of_the_reference_lru_commutes_with_the_lru_model(
    step: tuple[str, tuple[Any, ...]],
) -> None:
    _commutes(REFERENCE, "lru", *step)


@settings(deadline=None)  # the first example loads the policy
@given(step=steps())
def test_every_single_step_of_the_list_lru_commutes_with_the_core_model(
    step: tuple[str, tuple[Any, ...]],
) -> None:
    _commutes(LIST_LRU, "core", *step)


@settings(deadline=None)
@given(step=steps())
def test_legal_pre_states_are_well_formed_and_quiescent_but_for_the_key_to_mark(
    step: tuple[str, tuple[Any, ...]],
) -> None:
    from policyspec.model.state import is_quiescent, well_formed

    op, args = step
    state, model_args = decode(op, args[0], args[1], args[2], args[3:])
    assert well_formed(state)
    if op == "mark_evictable":
        assert state.refs[model_args[0]] == 0 and model_args[0] not in state.idle
    else:
        assert is_quiescent(state)


def test_legal_rejects_what_the_caller_contract_forbids() -> None:
    assert not legal("insert", 1, [], 1, 1, -1)  # the cache is full
    assert not legal("insert", 1, [], 2, 0, -1)  # key 0 is present
    assert legal("insert", 1, [], 2, 1, -1)
    assert not legal("remove", 1, [], 1, 1)  # key 1 is absent
    assert not legal("mark_non_evictable", 1, [-1], 2, 1)  # key 1 is in flight
    assert not legal("mark_evictable", 1, [-1], 2, 1)  # in flight, not at 0
    assert legal("mark_evictable", 1, [0], 2, 1)
    assert not legal("get", 1, [0], 2, 0)  # a 0 that is not idle: not quiescent
    assert not legal("touch", 1, [], 1, [0, 0, 0, 0])  # longer than MAX_LIST
    assert not legal("evict", 0, [], 1, -1, [])
    assert not legal("evict", 2, [], 2, 1, [1, 0])  # protected listed in order, once
    assert legal("evict", 2, [], 2, 1, [0, 1])


@pytest.mark.parametrize("name, profile, op, args, requirement", FAULTS)
def test_each_faulty_fixture_diverges_from_the_model_on_a_known_step(
    name: str, profile: str, op: str, args: tuple[Any, ...], requirement: str
) -> None:
    assert legal(op, *args)
    subject = load_proof_subject(TargetSpec(fixture(name), profile))
    state, model_args = decode(op, args[0], args[1], args[2], args[3:])
    divergence = check_step(subject, op, state, model_args)
    assert divergence is not None and divergence.requirement == requirement
    # the reference LRU, same step: no divergence
    _commutes(REFERENCE, profile, op, args)


def test_a_touch_order_fault_is_only_a_fault_under_lru() -> None:
    args = (2, [], 2, [0, 1])
    subject = load_proof_subject(TargetSpec(fixture("touch_forward"), "core"))
    state, model_args = decode("touch", args[0], args[1], args[2], args[3:])
    assert check_step(subject, "touch", state, model_args) is None


# -- abstraction pairs ---------------------------------------------------------


def test_reference_pair_round_trips_a_model_state() -> None:
    state = State({0: 0, 1: -1, 2: 0, 3: 1}, [2, 0], 4)
    policy: LRUCachePolicy[Any, Any] = LRUCachePolicy(cache_capacity=4)
    blocks = {k: Block(r, k) for k, r in state.refs.items()}
    lru_abstraction.from_model(policy, state, blocks)
    assert lru_abstraction.to_model(policy) == state
    assert policy.get(3) is blocks[3]


def test_pair_is_found_in_the_module_the_target_names() -> None:
    subject = load_proof_subject(TargetSpec(fixture("ignores_protected"), "core"))
    assert subject.abstraction is not None
    assert "ignores_protected.py" in subject.abstraction.origin


def test_reference_pair_is_inherited_by_a_subclass_that_registers_none() -> None:
    subject = load_proof_subject(TargetSpec(fixture("touch_forward"), "lru"))
    assert subject.abstraction is not None
    assert "inherited by" in subject.abstraction.origin


def test_registered_pair_wins_for_its_class_and_subclasses() -> None:
    class Base:
        pass

    class Child(Base):
        pass

    def to_model(policy: Any) -> State:
        return State()

    def from_model(policy: Any, state: State, blocks: Any) -> None:
        return None

    register_abstraction(Base, to_model, from_model)
    found = find_abstraction(Child)
    assert found is not None and found.to_model is to_model
    assert "inherited by" in found.origin


def test_a_module_may_hold_pairs_per_class_name() -> None:
    pair = (lru_abstraction.to_model, lru_abstraction.from_model)
    chosen = abstraction_from({"LRUCachePolicy": pair}, "m.POLICYSPEC_ABSTRACTION",
                              LRUCachePolicy)
    assert isinstance(chosen, Abstraction) and chosen.from_model is pair[1]
    with pytest.raises(ValueError, match="no entry for"):
        abstraction_from({"Other": pair}, "m.POLICYSPEC_ABSTRACTION", LRUCachePolicy)
    with pytest.raises(ValueError, match="must be"):
        abstraction_from((1, 2), "m.POLICYSPEC_ABSTRACTION")


def test_explicit_abstraction_option_overrides_and_is_checked() -> None:
    spec = TargetSpec(fixture("touch_forward"), "lru",
                      "policyspec.reference.lru_abstraction:NOPE")
    with pytest.raises(ProveUsageError, match="has no NOPE"):
        load_proof_subject(spec)


def test_a_policy_without_pair_gets_the_weaker_call_sequence_search() -> None:
    plan = plan_target(TargetSpec(fixture("no_pair_evicts_in_flight"), "core"))
    assert not plan.refinement
    assert [job.name for job in plan.jobs] == ["call sequences"]
    assert plan.method.startswith("WEAKER FALLBACK")


def test_a_policy_with_a_pair_gets_one_obligation_per_operation() -> None:
    plan = plan_target(TargetSpec(REFERENCE, "lru"))
    assert [job.name for job in plan.jobs] == list(OPERATIONS)
    assert all(job.kind == "asserts" for job in plan.jobs)


def _choices_for(*actions: Any) -> list[int]:
    """The choice list that makes the fallback run ``actions`` from empty."""
    from policyspec.model import operations as ops

    state, choices = State(capacity=TRACE_KEYS), []
    for action in actions:
        choices.append(options(state).index(action))
        if action[0] == "insert":
            state = ops.insert(state, action[1], action[2])
    return choices


def test_the_fallback_runs_a_short_fault_concretely() -> None:
    choices = _choices_for(("insert", 0, -1), ("evict", 1, frozenset()))
    subject = load_proof_subject(TargetSpec(fixture("no_pair_evicts_in_flight"), "core"))
    assert run_choices(subject, choices) == (
        "EVICT-IDLE-ONLY", [("insert", 0, -1), ("evict", 1, frozenset())])
    reference = load_proof_subject(TargetSpec(REFERENCE, "core"))
    assert trace_failure(reference, choices) is None


@settings(deadline=None)
@given(choices=st.lists(st.integers(0, MAX_CHOICE - 1), max_size=TRACE_STEPS))
def test_every_fallback_option_meets_the_caller_contract(choices: list[int]) -> None:
    from policyspec.harness import Lockstep
    from policyspec.model.actions import is_legal

    subject = _subject(REFERENCE, "lru")
    harness = Lockstep(subject.subject, subject.profile, TRACE_KEYS)
    for choice in choices:
        allowed = options(harness.state)
        assert allowed and all(is_legal(harness.state, action) for action in allowed)
        harness.apply(allowed[pick(choice, len(allowed))])


def test_pick_reaches_every_option_and_only_those() -> None:
    assert {pick(c, 5) for c in range(MAX_CHOICE)} == set(range(5))
    assert pick(0, 1) == 0


# -- reading CrossHair ---------------------------------------------------------


def test_crosshair_report_lines_become_statuses() -> None:
    out = "\n".join([
        "/x/ops.py:10: info: Confirmed over all paths.",
        "/x/ops.py:11: info: Not confirmed.",
        "/x/ops.py:12: error: false when calling insert(State(refs={}, idle=[], "
        "capacity=None), 0, 0) (which returns State(refs={0: 0}, idle=[], capacity=None))",
        "/x/ops.py:13: error: Unable to meet precondition.",
        "some debug noise",
    ])
    assert [c.status for c in parse_output(out)] == [CONFIRMED, NOT_CONFIRMED, COUNTEREXAMPLE,
                                                     ERROR]


def test_counterexample_calls_parse_back_to_values() -> None:
    message = ("false when calling insert(State(refs={0: -1}, idle=[], capacity=2), 1, "
               "ref_cnt=0) (which returns State(refs={}, idle=[(1)], capacity=2))")
    name, args, kwargs = parse_call(message, {"State": State})
    assert name == "insert" and args == (State({0: -1}, [], 2), 1) and kwargs == {"ref_cnt": 0}
    with pytest.raises(ValueError, match="unexpected call"):
        parse_call("AssertionError: X when calling f(os.system('x'))", {})
    with pytest.raises(ValueError):
        parse_call("AssertionError: X when calling f(print(1))", {})


def test_budget_shares_the_time_left_over_the_conditions_not_started() -> None:
    budget = Budget(240, 8, 2)
    assert budget.per_condition == pytest.approx(240 * 0.85 * 2 / 8)
    # half the time left for the last two conditions: they get more each
    assert budget.share(120, 2) == pytest.approx(120 * 0.85 * 2 / 2)
    assert budget.share(120, 2) > budget.per_condition
    # one job left: it runs on one core, whatever the workers
    assert budget.share(120, 1, jobs=1) == pytest.approx(120 * 0.85)
    assert Budget.per_path(49) == 7.0
    assert budget.deadline == 240 * 6 + 60
    assert Budget(1, 100, 1).per_condition == MIN_SHARE
    assert budget.share(-5, 3) == MIN_SHARE


def test_model_jobs_cover_every_contracted_transition() -> None:
    names = {job.name for job in model_jobs()}
    for op in OPERATIONS:
        assert f"operations.{op}" in names
    assert "state.State" in names
    assert all(job.kind == "PEP316" for job in model_jobs())


# -- reproduction tests --------------------------------------------------------


def _run_pytest(folder: Path) -> dict[str, str]:
    """Outcome per test file: passed, failed or error."""
    report = folder / "report.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}",
         str(folder)],
        capture_output=True, text=True, timeout=300, check=False, cwd=folder,
    )
    outcomes: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        module = case.get("classname", "").rsplit(".", 1)[-1]
        failed = case.find("failure") is not None or case.find("error") is not None
        outcomes[module] = "failed" if failed else "passed"
    return outcomes


def _message(op: str, args: tuple[Any, ...]) -> str:
    """What CrossHair prints for a counterexample to ``refines_<op>``."""
    return f"AssertionError: X when calling refines_{op}({', '.join(map(repr, args))})"


def _write_pair(folder: Path, name: str, test: str, faulty: str) -> None:
    assert f"TARGET = {faulty!r}" in test
    (folder / f"test_{name}_faulty.py").write_text(test)
    (folder / f"test_{name}_reference.py").write_text(
        test.replace(f"TARGET = {faulty!r}", f"TARGET = {REFERENCE!r}"))


def test_printed_tests_fail_on_the_faulty_policy_and_pass_on_the_reference(
    tmp_path: Path,
) -> None:
    for name, profile, op, args, requirement in FAULTS:
        spec = TargetSpec(fixture(name), profile)
        finding = refinement_finding(load_proof_subject(spec), spec, op, _message(op, args))
        assert finding.reproduced and finding.requirement == requirement
        _write_pair(tmp_path, name, finding.test, fixture(name))
    spec = TargetSpec(fixture("no_pair_evicts_in_flight"), "core")
    choices = _choices_for(("insert", 0, -1), ("evict", 1, frozenset()), ("clear",))
    message = f"AssertionError: X when calling explores_calls({choices!r})"
    finding = trace_finding(load_proof_subject(spec), spec, message)
    assert finding.requirement == "EVICT-IDLE-ONLY"
    _write_pair(tmp_path, "fallback", finding.test, fixture("no_pair_evicts_in_flight"))
    # a model counterexample: a condition that is false for these arguments
    message = ("false when calling insert(State(refs={0: -1}, idle=[], capacity=None), 1, 0) "
               "(which returns State(refs={0: -1, 1: 0}, idle=[1], capacity=None))")
    finding = model_finding("policyspec.model.operations.insert", "__return__.idle == []",
                            message)
    assert finding.reproduced
    (tmp_path / "test_model_faulty.py").write_text(finding.test)
    outcomes = _run_pytest(tmp_path)
    assert len(outcomes) == 2 * (len(FAULTS) + 1) + 1
    for module, outcome in outcomes.items():
        assert outcome == ("failed" if module.endswith("_faulty") else "passed"), module


def test_a_counterexample_that_does_not_replay_is_not_counted() -> None:
    spec = TargetSpec(REFERENCE, "lru")
    finding = refinement_finding(load_proof_subject(spec), spec, "touch",
                                 _message("touch", (2, [], 2, [0, 1])))
    assert not finding.reproduced and finding.test == ""
    message = "false when calling clear(State(refs={0: 0}, idle=[0], capacity=3))"
    finding = model_finding("policyspec.model.operations.clear",
                            "__return__ == State(capacity=state.capacity)", message)
    assert not finding.reproduced and "not counted" in finding.lines[-1]


# -- the optional crosshair Hypothesis profile ---------------------------------


def test_crosshair_profile_is_refused_with_a_clear_message_without_the_extra(
    tmp_path: Path,
) -> None:
    if hypothesis_profile.available():
        pytest.skip("hypothesis-crosshair is installed")
    (tmp_path / "test_nothing.py").write_text("def test_nothing() -> None:\n    pass\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "policyspec.prove.hypothesis_profile",
         "--hypothesis-profile=crosshair", "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
    )
    assert done.returncode == 4, done.stdout + done.stderr
    assert "pip install -e '.[crosshair]'" in done.stderr


@pytest.mark.crosshair
def test_single_step_refinement_holds_under_the_crosshair_backend() -> None:
    pytest.importorskip("hypothesis_crosshair_provider")
    assert hypothesis_profile.register()
    run = settings(backend="crosshair", max_examples=30, deadline=None)(
        given(step=steps())(lambda step: _commutes(REFERENCE, "lru", *step))
    )
    run()


# -- the command line ---------------------------------------------------------


@pytest.mark.parametrize("argv, message", [
    (["prove"], "either --model or a TARGET"),
    (["prove", "--model", REFERENCE], "either --model or a TARGET"),
    (["prove", REFERENCE, "--profile", "arc"], "refinement state"),
    (["prove", REFERENCE, "--profile", "nope"], "unknown profile"),
    (["prove", REFERENCE, "--only", "pop"], "unknown operation"),
    (["prove", "no/such/file.py:Policy"], "no such file"),
    (["prove", "--model", "--only", "no_such_function"], "no model function"),
])
def test_usage_errors_exit_2_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


# -- CrossHair itself (small budgets: CI runs these) --------------------------


def _prove(name: str, profile: str, op: str, budget: float = 60) -> Any:
    return prove_target(TargetSpec(fixture(name), profile), budget, only=(op,))


@pytest.mark.crosshair
def test_canary_crosshair_finds_the_planted_fault(tmp_path: Path) -> None:
    # If CrossHair or z3 silently stops searching, this turns CI red.
    report = _prove("evicts_in_flight", "core", "evict", budget=90)
    assert report.exit_code == 1, report.to_text()
    (finding,) = report.confirmed_findings
    assert finding.requirement == "EVICT-IDLE-ONLY"
    _write_pair(tmp_path, "canary", finding.test, fixture("evicts_in_flight"))
    assert _run_pytest(tmp_path) == {"test_canary_faulty": "failed",
                                     "test_canary_reference": "passed"}


@pytest.mark.crosshair
@pytest.mark.parametrize("name, profile, op, args, requirement",
                         [f for f in FAULTS if f[0] != "evicts_in_flight"])
def test_prove_finds_each_faulty_fixture_through_its_pair(
    name: str, profile: str, op: str, args: tuple[Any, ...], requirement: str
) -> None:
    report = _prove(name, profile, op)
    assert report.exit_code == 1, report.to_text()
    assert [f.requirement for f in report.confirmed_findings] == [requirement]


@pytest.mark.crosshair
def test_fallback_search_finds_a_shallow_fault_without_a_pair() -> None:
    report = prove_target(TargetSpec(fixture("no_pair_evicts_in_flight"), "core"), 60)
    assert "WEAKER FALLBACK" in report.to_text()
    assert report.exit_code == 1, report.to_text()
    assert report.confirmed_findings[0].requirement == "EVICT-IDLE-ONLY"


@pytest.mark.crosshair
def test_prove_model_reports_what_it_established() -> None:
    report = prove_model(4, only=("operations.clear",))
    text = report.to_text()
    assert report.exit_code == 0, text
    assert [r.name for r in report.results] == ["operations.clear"]
    assert report.results[0].status in (CONFIRMED, NOT_CONFIRMED)
    assert "evidence, not a proof" in text or "PROVED" in text
