"""`policyspec prove`: the pieces without CrossHair (fast), then CrossHair
itself (marked crosshair; its searches bounded by counts of paths, never by
time).

The fast part runs the obligations' bodies concretely: every canonical
pre-state is one the manager can leave; the derived pair agrees with the
model on every canonical step of the reference LRU, and on a sample for the
other references and vLLM 0.33's lone files; each faulty fixture, and the
three corpus faults v01, v09 and touch_walks_forward, break a known requirement on a known step; a
third-party policy is proved through the derived pair, never a hand-written
one; the operations follow the policy's revision; a counterexample becomes
check's minimal trace and a pytest test that fails on the faulty policy and
passes on the reference; the reports are check's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policyspec import hash_order
from policyspec.adapters import installed, load_subject
from policyspec.cli import main
from policyspec.harness.shapes import keys_shape
from policyspec.model.request import HOOKS
from policyspec.model.state import State, is_quiescent, well_formed
from policyspec.protocols import REVISIONS
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
from policyspec.prove.canonical import (
    MAX_KEYS,
    OPERATIONS,
    SEED_OPERATIONS,
    decode,
    legal,
    legal_values,
    pack,
    past_of,
    unpack,
)
from policyspec.prove.counterexamples import derived_finding, model_finding, refinement_finding
from policyspec.prove.crosshair_run import (
    CONFIRMED,
    COUNTEREXAMPLE,
    ERROR,
    MIN_SHARE,
    NOT_CONFIRMED,
    Budget,
    parse_output,
)
from policyspec.prove.derived import (
    LONG_PROTECTED,
    LONG_TOUCH,
    STORE,
    call_failure,
    derived_failure,
    variants,
)
from policyspec.prove.operation_bounds import operations_of
from policyspec.prove.proof_report import ObligationResult, ProofReport
from policyspec.prove.prover import model_jobs, plan_target
from policyspec.reference import lru_abstraction
from policyspec.reference.lru import LRUCachePolicy
from policyspec.reports.html import render_run_page
from policyspec.subject import Block

ROOT = Path(__file__).parent
FIXTURES = ROOT / "prove_fixtures"
FAULTY = ROOT / "faulty"
VLLM = Path("/work/wheels/0.33.0/vllm/v1/kv_offload/cpu/policies")
REFERENCE = "policyspec.reference:LRUCachePolicy"
SCHEMA = json.loads((ROOT.parent / "spec" / "report.schema.json").read_text())


def fixture(name: str, cls: str = "Policy") -> str:
    return f"{FIXTURES / name}.py:{cls}"


def faulty(name: str) -> str:
    return f"{FAULTY / name}.py:Policy"


THIRD_PARTY = fixture("third_party_evicts_in_flight")

# (target, profile, operation, canonical values, requirement the derived pair
# sees): the fixtures of tests/prove_fixtures/ and three faults of tests/faulty/
DERIVED = [
    (fixture("ignores_protected"), "core", "evict", (1, 0, 0, 1, 1, 1), "EVICT-UNPROTECTED"),
    (fixture("evicts_in_flight"), "core", "evict", (0, 1, 0, 1, 1, 0), "EVICT-IDLE-ONLY"),
    (fixture("none_changes_state"), "core", "evict", (1, 0, 0, 2, 2, 0), "EVICT-ATOMIC"),
    (fixture("touch_records_absent"), "core", "touch", (0, 0, 0, 1, 0, 1, 0, 0, 0),
     "API-NO-RAISE"),
    (fixture("touch_forward"), "lru", "touch", (2, 0, 0, 2, 0, 2, 0, 1, 0),
     "LRU-EVICT-ORDER"),
    (fixture("mark_at_lru_end"), "lru", "mark_evictable", (1, 1, 1, 2, 1), "LRU-EVICT-ORDER"),
    (THIRD_PARTY, "core", "evict", (0, 1, 0, 1, 1, 0), "EVICT-IDLE-ONLY"),
    (faulty("v01_ignores_protected"), "core", "evict", (1, 0, 0, 1, 1, 1), "EVICT-UNPROTECTED"),
    (faulty("touch_walks_forward"), "lru", "touch", (2, 0, 0, 2, 0, 2, 0, 1, 0),
     "LRU-EVICT-ORDER"),
    (faulty("v09_evicts_in_flight_first"), "core", "evict", (1, 1, 0, 2, 1, 0),
     "EVICT-IDLE-ONLY"),
    # a past: key 0 stored and evicted before, then inserted again
    (faulty("g12_revives_old_block"), "core", "insert", (0, 0, 0, 1, 1, 0, -1), "GET-IDENTITY"),
    # files that fit R9 and R10, proved as the arc profile's revision (R9, with
    # touch) as check drives them, not as the newest revision they fit
    (faulty("arc_v03_touch_drops_in_flight"), "arc", "touch", (0, 1, 0, 1, 0, 1, 0, 0, 0),
     "TOUCH-KEEPS-MEMBERSHIP"),
    (faulty("arc_v03_touch_raises_on_in_flight"), "arc", "touch", (0, 1, 0, 1, 0, 1, 0, 0, 0),
     "TOUCH-TOTAL"),
]
# (target, profile, operation, canonical values, requirement): faults seen
# only in a variant of the call (policyspec.prove.derived.variants): 4,097
# more protected keys (test_a_protected_set_cut_at_1000_shows_in_some_variant:
# which key sits past the cut is hash order); a touch after 1,025 others;
# keys as a generator
IN_A_VARIANT = [
    (faulty("size_touch_bulk_makes_busy_idle"), "core", "touch", (0, 1, 0, 1, 0, 1, 0, 0, 0),
     "EVICT-IDLE-ONLY"),
    (faulty("hooks/hook_store_miss_needs_a_list"), "arc", "on_store_miss",
     (0, 0, 0, 1, 0, 1, 0, 0, 0), "HOOK-TOTAL"),
]
DERIVED += IN_A_VARIANT
REFERENCES = {"arc": "policyspec.reference:ARCCachePolicy"}
"""The reference a profile's faults are compared with (REFERENCE otherwise)."""

# (fixture, profile, operation, canonical values, requirement): through the
# fixture's hand-written pair (``--abstraction declared``)
DECLARED = [
    ("ignores_protected", "core", "evict", (1, 0, 0, 1, 1, 1), "EVICT-UNPROTECTED"),
    ("evicts_in_flight", "core", "evict", (0, 1, 0, 1, 1, 0), "EVICT-IDLE-ONLY"),
    ("none_changes_state", "core", "evict", (1, 0, 0, 2, 2, 0), "EVICT-ATOMIC"),
    ("touch_records_absent", "core", "touch", (0, 0, 0, 1, 0, 1, 0, 0, 0),
     "TOUCH-KEEPS-MEMBERSHIP"),
    ("remove_drops_neighbour", "core", "remove", (2, 0, 0, 2, 0), "REMOVE-DROPS"),
    ("touch_forward", "lru", "touch", (2, 0, 0, 2, 0, 2, 0, 1, 0), "LRU-TOUCH-ORDER"),
    ("mark_at_lru_end", "lru", "mark_evictable", (1, 1, 1, 2, 1), "LRU-MARK-RECENCY"),
]


@pytest.fixture(autouse=True, scope="module")
def _stand_ins() -> Iterator[None]:
    """The vLLM stand-ins, as prove keeps them for a run (a policy may
    import ``vllm`` inside a method)."""
    with installed():
        yield


@cache
def _subject(target: str, profile: str, abstraction: str | None = None,
             strict: bool = False) -> ProofSubject:
    return load_proof_subject(TargetSpec(target, profile, abstraction, strict))


def _broken(subject: ProofSubject, op: str, values: tuple[int, ...]) -> str | None:
    state, args = decode(op, values)
    if subject.abstraction is not None:
        divergence = check_step(subject, op, state, args)
        return None if divergence is None else divergence.requirement
    failure = derived_failure(subject, op, state, args, past_of(op, values))
    return None if failure is None else failure.requirement


# -- the canonical pre-states ------------------------------------------------


def test_every_legal_value_stands_for_a_pre_state_the_manager_can_leave() -> None:
    for op in OPERATIONS:
        values = legal_values(op)
        assert values, op
        for value in values:
            state, args = decode(op, value)
            assert well_formed(state) and len(state.refs) <= (state.capacity or 0), value
            if op == "mark_evictable":
                key = args[0]
                assert state.refs[key] == 0 and key not in state.idle
                assert is_quiescent(State({k: r for k, r in state.refs.items() if k != key},
                                          state.idle))
            else:
                assert is_quiescent(state), (op, value)
            assert unpack(op, *pack(op, value)) == value


def test_legal_rejects_what_the_caller_contract_forbids() -> None:
    assert not legal("insert", 1, 0, 0, 1, 0, 1, -1)  # the cache is full
    assert not legal("insert", 1, 0, 0, 2, 0, 0, -1)  # key 0 is present
    assert legal("insert", 1, 0, 0, 2, 0, 1, -1)
    assert legal("insert", 1, 0, 0, 2, 1, 1, -1)  # key 1 was stored and evicted before
    assert not legal("insert", 1, 0, 0, 2, 2, 1, -1)  # past is 0 or 1
    assert not legal("remove", 1, 0, 0, 1, 1)  # key 1 is absent
    assert not legal("mark_non_evictable", 1, 1, 0, 2, 1)  # key 1 is in flight
    assert not legal("mark_evictable", 1, 1, 0, 2, 1)  # in flight: no load to end
    assert legal("mark_evictable", 1, 1, 1, 2, 1)  # being read: its load ends
    assert not legal("get", 1, 0, 1, 2, 0, 0)  # reads names a busy key there is not
    assert not legal("touch", 1, 0, 0, 1, 0, 1, 0, 1, 0)  # a key past the count is not 0
    assert not legal("evict", 0, 0, 0, 1, -1, 0)
    assert not legal("evict", 1, 0, 0, 1, 1, 4)  # protected names keys 0 and 1 only
    assert legal("evict", 1, 0, 0, 1, 1, 3)  # the present key and the absent one
    assert not legal("on_store_miss", 1, 0, 0, 2, 0, 1, 0, 0, 0)  # key 0 is present
    assert not legal("on_request_access", 2, 0, 0, 2, 0, 2, 1, 1, 0)  # key 1 twice
    assert legal("on_request_finished", 2, 0, 0, 2, 2, 1, 0, 1, 2, 1)


# -- the derived pair, concretely ----------------------------------------------


@pytest.mark.slow  # about 11,000 steps (3 to 16 s at load 6 to 9)
def test_the_derived_pair_agrees_with_the_model_on_every_step_of_the_reference_lru() -> None:
    subject = _subject(REFERENCE, "lru")
    for op in SEED_OPERATIONS:
        for values in legal_values(op):
            assert _broken(subject, op, values) is None, (op, values)


@st.composite
def steps(draw: st.DrawFn, ops: tuple[str, ...] = OPERATIONS) -> tuple[str, tuple[int, ...]]:
    """An operation and legal canonical values for it."""
    op = draw(st.sampled_from(ops), label="op")
    return op, draw(st.sampled_from(legal_values(op)), label="values")


@pytest.mark.parametrize("target, profile", [
    (REFERENCE, "lru"),
    ("policyspec.reference:ARCCachePolicy", "arc"),
    ("policyspec.reference:LRU033CachePolicy", "lru-0.33"),
    ("policyspec.reference:LRU034CachePolicy", "lru-0.34"),
    ("policyspec.reference:ARC034CachePolicy", "arc-0.34"),  # ARC's probes without touch
    (f"{VLLM / 'lru.py'}:LRUCachePolicy", "lru-0.33"),
    (f"{VLLM / 'arc.py'}:ARCCachePolicy", "arc"),
    (f"{VLLM / 'arc.py'}:ARCCachePolicy", "core"),
])
def test_the_derived_pair_agrees_with_the_exact_model_of_each_reference(
    target: str, profile: str
) -> None:
    if not VLLM.exists() and "reference" not in target:
        pytest.skip("vLLM 0.33.0's files are not unpacked here")
    subject = _subject(target, profile)

    @settings(max_examples=60, deadline=None, database=None)
    @given(step=steps(operations_of(subject.subject)))
    def agrees(step: tuple[str, tuple[int, ...]]) -> None:
        assert _broken(subject, *step) is None, step

    agrees()


@pytest.mark.parametrize("target, profile, op, values, requirement", DERIVED)
def test_each_faulty_policy_breaks_a_known_requirement_on_a_known_step(
    target: str, profile: str, op: str, values: tuple[int, ...], requirement: str
) -> None:
    assert legal(op, *values)
    assert _broken(_subject(target, profile), op, values) == requirement
    assert _broken(_subject(REFERENCES.get(profile, REFERENCE), profile), op, values) is None


@pytest.mark.parametrize("target, profile, op, values, requirement", [
    *IN_A_VARIANT,
    # a refusal of a store of 64 keys: a SHOULD, so only under --strict
    (faulty("scan_gate_counts_protected"), "core", "evict", (1, 0, 0, 1, 1, 0),
     "EVICT-LIVENESS"),
])
def test_the_faults_of_long_or_generator_arguments_show_only_in_a_variant(
    target: str, profile: str, op: str, values: tuple[int, ...], requirement: str
) -> None:
    subject = _subject(target, profile, strict=True)
    state, args = decode(op, values)
    (variant,) = variants(op, state, args)
    assert call_failure(subject, op, state, args, False) is None
    failure = call_failure(subject, op, state, variant, False)
    assert failure is not None and failure.requirement == requirement
    reference = _subject(REFERENCES.get(profile, REFERENCE), profile, strict=True)
    assert call_failure(reference, op, state, variant, False) is None


def test_a_protected_set_cut_at_1000_shows_in_some_variant() -> None:
    """The keys past the policy's cut depend on the set's hash order: over
    every eviction with a long variant, some present key sits past the cut
    under the hash seed the command runs with (policyspec.hash_order). This
    process's seed is pytest's, and under some (49, say) none does: the
    body runs again in a process of its own under the command's seed."""
    if not hash_order.fixed():
        node = f"{__file__}::test_a_protected_set_cut_at_1000_shows_in_some_variant"
        ran = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
             node], capture_output=True, text=True, check=False,
            env={**os.environ, hash_order.ENV: hash_order.HASH_SEED})
        assert ran.returncode == 0, ran.stdout[-3000:]
        return
    subject = _subject(faulty("size_protected_cut_at_1000"), "core")
    reference = _subject(REFERENCE, "core")
    found = []
    for values in legal_values("evict"):
        state, args = decode("evict", values)
        for variant in variants("evict", state, args):
            if len(variant[1]) > 1_000:
                assert call_failure(subject, "evict", state, args, False) is None
                failure = call_failure(subject, "evict", state, variant, False)
                if failure is not None:
                    found.append(failure.requirement)
                    assert call_failure(reference, "evict", state, variant, False) is None
    assert found and set(found) == {"EVICT-UNPROTECTED"}


def test_a_variant_adds_only_keys_never_stored() -> None:
    state, args = decode("evict", (2, 1, 0, 3, 1, 7))  # every present key protected
    ((n, protected),) = variants("evict", state, args)
    added = protected - args[1]
    assert n == 1 and len(added) == LONG_PROTECTED and min(added) > MAX_KEYS
    state, args = decode("evict", (2, 1, 0, 3, 1, 8))  # only the absent key protected
    ((n, protected),) = variants("evict", state, args)
    assert n == 1 and len(protected - args[1]) == STORE and min(protected - args[1]) > MAX_KEYS
    state, args = decode("touch", (1, 0, 0, 1, 0, 1, 0, 0, 0))
    ((keys,),) = variants("touch", state, args)
    assert keys[-1:] == args[0] and len(keys) == LONG_TOUCH + 1 and min(keys[:-1]) > MAX_KEYS
    state, args = decode("on_store_miss", (0, 0, 0, 1, 0, 1, 0, 0, 1))
    ((keys, placed),) = variants("on_store_miss", state, args)
    assert keys[:-1] == args[0] and keys[-1] > MAX_KEYS and placed == args[1]
    assert keys_shape("on_store_miss", keys) == "generator"
    # no variant where the call cannot show more: evict(2), a touch of two keys
    assert variants("evict", *decode("evict", (2, 1, 0, 3, 2, 7))) == []
    assert variants("evict", *decode("evict", (2, 1, 0, 3, 1, 1))) == []  # some protected
    assert variants("touch", *decode("touch", (2, 0, 0, 2, 0, 2, 0, 1, 0))) == []


@pytest.mark.slow  # about 1,000 calls with variants (8 s)
@pytest.mark.parametrize("op", ["evict", "touch"])
def test_the_reference_lru_passes_every_variant(op: str) -> None:
    subject = _subject(REFERENCE, "lru")
    for values in legal_values(op):
        state, args = decode(op, values)
        for variant in variants(op, state, args):
            assert call_failure(subject, op, state, variant, past_of(op, values)) is None, values


def test_a_key_no_longer_evictable_under_core_shows_only_with_strict() -> None:
    # remove drops a neighbour from the eviction order: through evictions the
    # neighbour is present but refused, which core judges as a SHOULD.
    values = (2, 0, 0, 2, 0)
    assert _broken(_subject(fixture("remove_drops_neighbour"), "core"), "remove", values) is None
    strict = _subject(fixture("remove_drops_neighbour"), "core", strict=True)
    assert _broken(strict, "remove", values) == "EVICT-LIVENESS"


@pytest.mark.parametrize("name, profile, op, values, requirement", DECLARED)
def test_each_fixture_diverges_through_its_hand_written_pair(
    name: str, profile: str, op: str, values: tuple[int, ...], requirement: str
) -> None:
    subject = _subject(fixture(name), profile, "declared")
    assert subject.abstraction is not None
    assert _broken(subject, op, values) == requirement
    assert _broken(_subject(REFERENCE, profile, "declared"), op, values) is None


# -- which pair, which operations ----------------------------------------------


@pytest.mark.parametrize("target, profile", [
    (THIRD_PARTY, "core"),
    (fixture("ignores_protected"), "core"),  # its module declares a pair
    (fixture("touch_forward"), "lru"),  # it inherits the reference LRU's registered pair
    (faulty("v01_ignores_protected"), "core"),
])
def test_prove_on_a_third_party_policy_uses_no_hand_written_pair(
    target: str, profile: str
) -> None:
    plan = plan_target(TargetSpec(target, profile))
    assert plan.derived and plan.subject.abstraction is None
    assert "derived pair" in plan.method
    assert {job.env.get("POLICYSPEC_PROVE_ABSTRACTION") for job in plan.jobs} == {None}


def test_a_hand_written_pair_is_used_only_when_asked_for() -> None:
    subject = _subject(fixture("ignores_protected"), "core", "declared")
    assert subject.abstraction is not None
    assert "ignores_protected.py" in subject.abstraction.origin
    inherited = _subject(fixture("touch_forward"), "lru", "declared")
    assert inherited.abstraction is not None and "inherited by" in inherited.abstraction.origin
    with pytest.raises(ProveUsageError, match="declares no pair"):
        load_proof_subject(TargetSpec(THIRD_PARTY, "core", "declared"))
    with pytest.raises(ProveUsageError, match="has no NOPE"):
        load_proof_subject(TargetSpec(fixture("touch_forward"), "lru",
                                      "policyspec.reference.lru_abstraction:NOPE"))
    with pytest.raises(ProveUsageError, match="refinement state"):
        load_proof_subject(TargetSpec(REFERENCE, "arc", "declared"))


def test_the_operations_are_the_revisions() -> None:
    seed = load_subject(REFERENCE)
    assert operations_of(seed) == SEED_OPERATIONS
    if VLLM.exists():
        # (0.33's file fits R9 and R10, its touch aside: driven as R9 here)
        vllm = load_subject(f"{VLLM / 'lru.py'}:LRUCachePolicy", api="R9")
        assert vllm.api == "R9" and operations_of(vllm) == (*SEED_OPERATIONS, *HOOKS)
        assert operations_of(vllm, hooks=False) == SEED_OPERATIONS
    # A file that fits R9 and R10 is proved as the profile's revision, as
    # check drives it: with touch under arc (R9), without under arc-0.34.
    both = faulty("arc_v03_touch_drops_in_flight")
    assert "touch" in operations_of(_subject(both, "arc").subject)
    assert "touch" not in operations_of(_subject(both, "arc-0.34").subject)
    plain = replace(seed, api="R1", capabilities=frozenset({"touch"}))
    assert operations_of(plain) == ("get", "insert", "remove", "touch", "evict")
    assert plan_target(TargetSpec(REFERENCE, "lru")).jobs[3].name == "touch"


def test_a_revision_without_touch_is_never_sent_one(monkeypatch: pytest.MonkeyPatch) -> None:
    r9 = REVISIONS["R9"]
    without = replace(r9, name="R-no-touch",
                      methods=tuple(m for m in r9.methods if m.name != "touch"))
    monkeypatch.setitem(REVISIONS, "R-no-touch", without)
    subject = replace(load_subject(REFERENCE), api="R-no-touch",
                      capabilities=frozenset({"clear", "mark", "hooks"}))
    ops = operations_of(subject)
    assert "touch" not in ops and set(HOOKS) <= set(ops)


# -- counterexamples -----------------------------------------------------------


def _message(op: str, values: tuple[int, ...]) -> str:
    """What CrossHair prints for a counterexample to ``refines_<op>``."""
    return f"AssertionError: X when calling refines_{op}({', '.join(map(repr, values))})"


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


def _write_pair(folder: Path, name: str, test: str, faulty_target: str) -> None:
    assert f"TARGET = {faulty_target!r}" in test
    (folder / f"test_{name}_faulty.py").write_text(test)
    (folder / f"test_{name}_reference.py").write_text(
        test.replace(f"TARGET = {faulty_target!r}", f"TARGET = {REFERENCE!r}"))


def test_counterexamples_become_minimal_traces_and_tests_that_fail_only_on_the_fault(
    tmp_path: Path,
) -> None:
    found = []
    for index in (0, 7, 8):  # a fixture, v01 and touch_walks_forward (lru)
        target, profile, op, values, _ = DERIVED[index]
        spec = TargetSpec(target, profile)
        finding = derived_finding(_subject(target, profile), spec, op, _message(op, values))
        assert finding.reproduced and finding.report is not None
        found.append(finding)
        _write_pair(tmp_path, f"derived{index}", finding.test, target)
    unprotected, v01, forward = found
    assert unprotected.requirement == v01.requirement == "EVICT-UNPROTECTED"
    assert v01.report is not None and len(v01.report.trace) == 3  # check's minimal witness
    # check's minimiser and blame: the order fault is named after the touch
    assert forward.requirement == "LRU-TOUCH-ORDER"
    # through a hand-written pair, and a model counterexample
    name, profile, op, values, requirement = DECLARED[4]
    spec = TargetSpec(fixture(name), profile, "declared")
    finding = refinement_finding(_subject(fixture(name), profile, "declared"), spec, op,
                                 _message(op, values))
    assert finding.reproduced and finding.requirement == requirement
    _write_pair(tmp_path, "declared", finding.test, fixture(name))
    message = ("false when calling insert(State(refs={0: -1}, idle=[], capacity=None), 1, 0) "
               "(which returns State(refs={0: -1, 1: 0}, idle=[1], capacity=None))")
    finding = model_finding("policyspec.model.operations.insert", "__return__.idle == []",
                            message)
    assert finding.reproduced
    (tmp_path / "test_model_faulty.py").write_text(finding.test)
    outcomes = _run_pytest(tmp_path)
    assert len(outcomes) == 9
    for module, outcome in outcomes.items():
        assert outcome == ("failed" if module.endswith("_faulty") else "passed"), module


def test_a_counterexample_that_does_not_replay_is_not_counted() -> None:
    spec = TargetSpec(REFERENCE, "lru")
    message = _message("touch", (2, 0, 0, 2, 0, 2, 0, 1, 0))
    finding = derived_finding(_subject(REFERENCE, "lru"), spec, "touch", message)
    assert not finding.reproduced and finding.test == ""
    finding = refinement_finding(_subject(REFERENCE, "lru", "declared"), spec, "touch", message)
    assert not finding.reproduced
    message = "false when calling clear(State(refs={0: 0}, idle=[0], capacity=3))"
    finding = model_finding("policyspec.model.operations.clear",
                            "__return__ == State(capacity=state.capacity)", message)
    assert not finding.reproduced and "not counted" in finding.lines[-1]


# -- the report family ---------------------------------------------------------


def test_a_proof_is_reported_by_checks_writers() -> None:
    target, profile, op, values, _ = DERIVED[7]
    spec = TargetSpec(target, profile)
    finding = derived_finding(_subject(target, profile), spec, op, _message(op, values))
    report = ProofReport("t", "m", ["b"], Budget(10, 3, 2), target=target, profile=profile,
                         api="R3")
    report.results = [
        ObligationResult("get", CONFIRMED, 1.0, 5.0, 1, 1, bound="any key", values=211),
        ObligationResult("touch", NOT_CONFIRMED, 1.0, 5.0, 1, 0, bound="lists"),
        ObligationResult("evict", COUNTEREXAMPLE, 1.0, 5.0, 1, 0, bound="n"),
    ]
    report.findings = [finding]
    data = report.to_report().to_json()
    jsonschema.validate(data, SCHEMA)
    rows = {r["id"]: (r["status"], r["checks"]) for r in data["requirements"]}
    assert rows == {"PROVE-GET": ("pass", 211), "PROVE-TOUCH": ("not-tested", 0),
                    "PROVE-EVICT": ("fail", 0)}
    assert data["verdict"] == "fail" and data["stats"]["prove"]["result"] == "counterexample"
    (failure,) = data["failures"]
    assert failure["requirement"] == "EVICT-UNPROTECTED" and failure["actions"]
    suite = ET.fromstring(report.to_report().to_junit())
    assert [c.get("name") for c in suite.iter("testcase")] == list(rows)
    page = render_run_page(report.to_report(), rows="obligation")
    assert "Obligations" in page and "EVICT-UNPROTECTED" in page
    assert "COUNTEREXAMPLE (evict): EVICT-UNPROTECTED (MUST)" in report.to_text()


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
    for op in SEED_OPERATIONS:
        assert f"operations.{op}" in names
    assert "state.State" in names
    assert all(job.kind == "PEP316" for job in model_jobs())


# -- abstraction pairs (the hand-written option) -------------------------------


def test_reference_pair_round_trips_a_model_state() -> None:
    state = State({0: 0, 1: -1, 2: 0, 3: 1}, [2, 0], 4)
    policy: LRUCachePolicy[Any, Any] = LRUCachePolicy(cache_capacity=4)
    blocks = {k: Block(r, k) for k, r in state.refs.items()}
    lru_abstraction.from_model(policy, state, blocks)
    assert lru_abstraction.to_model(policy) == state
    assert policy.get(3) is blocks[3]


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
    subject = _subject(REFERENCE, "lru")
    run = settings(backend="crosshair", max_examples=30, deadline=None)(
        given(step=steps(SEED_OPERATIONS))(lambda step: _broken(subject, *step) is None)
    )
    run()


# -- the command line ---------------------------------------------------------


@pytest.mark.parametrize("argv, message", [
    (["prove"], "either --model or a TARGET"),
    (["prove", "--model", REFERENCE], "either --model or a TARGET"),
    (["prove", REFERENCE, "--profile", "arc", "--abstraction", "declared"], "refinement state"),
    (["prove", REFERENCE, "--profile", "nope"], "unknown profile"),
    (["prove", REFERENCE, "--only", "pop"], "unknown operation"),
    (["prove", REFERENCE, "--only", "on_store_miss"], "unknown operation"),
    (["prove", "no/such/file.py:Policy"], "no such file"),
    (["prove", "--model", "--only", "no_such_function"], "no model function"),
    (["prove", "--model", "--json-report", "x.json"], "go with a TARGET"),
])
def test_usage_errors_exit_2_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_iterations_must_be_a_count(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["prove", REFERENCE, "--iterations", "0"])
    assert exit_.value.code == 2
    assert "at least 1" in capsys.readouterr().err


# -- CrossHair itself (bounded by counts of paths: CI runs these) --------------

PATHS = 1000
"""``--iterations`` of the CrossHair tests: found or not does not depend on
the machine (the three faults of tests/faulty/ in DERIVED are found within it)."""


def _prove(target: str, profile: str, op: str, abstraction: str | None = None) -> Any:
    spec = TargetSpec(target, profile, abstraction)
    return prove_target(spec, 600, only=(op,), iterations=PATHS)


@pytest.mark.crosshair
def test_canary_crosshair_finds_the_planted_fault_through_the_derived_pair(
    tmp_path: Path,
) -> None:
    # If CrossHair or z3 silently stops searching, this turns CI red.
    report = _prove(THIRD_PARTY, "core", "evict")
    assert report.exit_code == 1, report.to_text()
    (finding,) = report.confirmed_findings
    assert finding.requirement == "EVICT-IDLE-ONLY"
    _write_pair(tmp_path, "canary", finding.test, THIRD_PARTY)
    assert _run_pytest(tmp_path) == {"test_canary_faulty": "failed",
                                     "test_canary_reference": "passed"}


@pytest.mark.crosshair
@pytest.mark.parametrize("target, profile, op, requirement", [
    (faulty("v01_ignores_protected"), "core", "evict", "EVICT-UNPROTECTED"),
    pytest.param(faulty("touch_walks_forward"), "lru", "touch", "LRU-TOUCH-ORDER",
                 marks=pytest.mark.slow),
])
def test_prove_finds_the_faults_of_issue_30(
    target: str, profile: str, op: str, requirement: str
) -> None:
    report = _prove(target, profile, op)
    assert report.exit_code == 1, report.to_text()
    assert [f.requirement for f in report.confirmed_findings] == [requirement]


@pytest.mark.crosshair
def test_an_operation_whose_paths_are_all_explored_is_reported_proved() -> None:
    report = _prove(REFERENCE, "lru", "mark_non_evictable")
    (result,) = report.results
    assert report.exit_code == 0 and report.result == "proved", report.to_text()
    assert report.verdict == "pass"
    assert result.status == CONFIRMED
    assert result.values == len(legal_values("mark_non_evictable"))
    assert "PROVED within the bounds" in report.to_text()


@pytest.mark.crosshair
def test_a_hand_written_pair_still_finds_its_fixtures_fault() -> None:
    report = _prove(fixture("mark_at_lru_end"), "lru", "mark_evictable", "declared")
    assert report.exit_code == 1, report.to_text()
    assert [f.requirement for f in report.confirmed_findings] == ["LRU-MARK-RECENCY"]


@pytest.mark.crosshair
def test_prove_model_reports_what_it_established() -> None:
    report = prove_model(4, only=("operations.clear",))
    text = report.to_text()
    assert [r.name for r in report.results] == ["operations.clear"]
    assert report.results[0].status in (CONFIRMED, NOT_CONFIRMED)
    # Paths left unexplored establish nothing: not judged (exit 3), no pass.
    assert report.exit_code == (0 if report.results[0].status == CONFIRMED else 3), text
    assert "evidence, not a proof" in text or "PROVED" in text
