"""Histories (spec/history.md): the guard records them behind the emulated
vLLM 0.33 manager, check-history judges them without the policy.

The corpus test holds the pair to the corpus of tests/test_corpus.py: every
faulty policy of the core and lru profiles whose fault the manager's
traffic can show is caught under its header's id (the first MUST failure's
id, or its likely culprit), by the offline judge and, for core, by the
guard's check mode online with the same id; every correct policy conforms
to core (and to lru when its header says so). HISTORY_GAPS names the faults
a history of this workload cannot show or names under another id, as a
strict xfail: it turns red the day the judge names them right.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from test_corpus import CORRECT, FAULTY, Header, corpus

from policyspec.adapters import subject_for_class
from policyspec.cli import main
from policyspec.commands.record import record
from policyspec.history import format as fmt
from policyspec.history.judge import judge_paths, window_case
from policyspec.profiles import get_profile
from policyspec.reference.lru import LRUCachePolicy
from policyspec.registry import load_registry
from policyspec.vectors.runner import replay_case

CALLS = 20_000
CAPACITY = 16
SEED = 1
REFERENCE = "policyspec.reference.lru:LRUCachePolicy"

SKIPPED_ENGINES = {"metamorphic", "exhaustive", "evict-linear", "cost", "size"}
"""Faults only a relation between runs, every sequence, a timing or
production sizes show: one history of this workload (its capacity, CAPACITY)
cannot."""

HISTORY_GAPS: dict[str, str] = {
    "arc_g03_adapts_after_revival": "read as ARC-EVICT-ORDER: the model judge has no diagnosis "
                                    "to name the ghost adaptation",
    "arc_v07_erases_ghost_before_adapting": "read as ARC-EVICT-ORDER (no diagnosis)",
    "arc_v03_touch_promotes_in_flight": "read as ARC-EVICT-ORDER (no diagnosis)",
    "arc_v06_ghosts_bounded_by_constant": "read as ARC-EVICT-ORDER (no diagnosis)",
    "arc_v02_evicts_while_scanning": "EVICT-ATOMIC needs a probe after the refusal",
    "hook_store_miss_needs_a_list": "the manager always passes a list",
    "arc033_adapts_in_insert": "read as ARC-EVICT-ORDER, likely ARC-FINISH-REUSE: the last call "
                               "naming the key is not the insert that adapted",
    "arc033_promotes_insertion_only": "read as ARC-EVICT-ORDER, likely ARC-INSERT-T1",
    "lru033_rank_survives_clear": "read as LRU033-EVICT-ORDER, likely LRU033-FINISH-COMMIT: "
                                  "the rank's generation is not checked",
    "lru033_refinishes_earlier_requests": "read as LRU033-EVICT-ORDER, likely "
                                          "LRU033-INSERT-RANK",
    "hook_chunks_per_thread": "needs calls from two threads (record --two-threads)",
    "hook_state_per_thread": "needs calls from two threads (record --two-threads)",
    "hook_access_pins_keys": "the lost key shows when the policy raises on it (API-NO-RAISE)",
    "hook_store_miss_makes_room": "the lost key shows as GET-ABSENT",
    "evict_zero_returns_none": "the manager never asks evict(0) (its fast-fail guard)",
    "g01_new_blocks_oldest": "the manager inserts in flight only: an idle insert's recency "
                             "never shows",
    "insert_drops_oldest_over_limit": "the manager never holds more chunks than the capacity",
    "g02_drops_victims_before_notify": "EVICT-ATOMIC needs a probe after the refusal; the "
                                       "history shows the key lost later (GET-ABSENT)",
    "v02_evicts_while_scanning": "EVICT-ATOMIC: the history shows a needless refusal (SHOULD) "
                                 "and a wrong LRU order",
    "g11_evict_reverses_order": "LRU-ORDER-KEPT is read as LRU-EVICT-ORDER (likely "
                                "LRU-MARK-RECENCY): no probe tells which call reordered",
    "v10_remove_drops_neighbour": "the neighbour's loss shows as GET-ABSENT; the last call "
                                  "naming the lost key is its insert, not the remove",
    "v11_misses_load_end": "MARK-EVICTABLE-ELIGIBLE is read as LRU-EVICT-ORDER (likely "
                           "LRU-MARK-RECENCY)",
    "ttl_raises_on_clock_step_back": "a recording reads the real clock, which does not step "
                                     "back while it records (a check steps its virtual one)",
}

REGISTRY = load_registry()
LEVELS = {rid: r.level for rid, r in REGISTRY.items()}


JUDGED = ("core", "lru", "lru-0.33", "arc")


def _judgeable(h: Header) -> bool:
    req = REGISTRY.get(h.requirement)
    return (h.profile in JUDGED and req is not None and req.profile in JUDGED
            and not SKIPPED_ENGINES & set(h.engines))


FAULTS = [h for h in corpus(FAULTY) + corpus(FAULTY / "hooks") if _judgeable(h)]
CORRECTS = corpus(CORRECT)


@pytest.fixture(autouse=True)
def _quiet_guard() -> None:
    logging.getLogger("policyspec.guard").setLevel(logging.CRITICAL)


def _record(path: Path, out: Path, mode: str = "check", api: str | None = None,
            **kw: int) -> object:
    guard, _ = record(f"{path}:Policy", str(out), calls=kw.get("calls", CALLS), seed=SEED,
                      capacity=kw.get("capacity", CAPACITY), mode=mode, api=api)
    return guard


def test_record_then_check_history_on_the_reference_lru_conforms(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "ref.jsonl"
    assert main(["record", REFERENCE, "--out", str(out), "--calls", "30000", "--seed", "3"]) == 0
    assert main(["check-history", str(out), "--json", str(tmp_path / "v.json")]) == 0
    text = capsys.readouterr().out
    assert "core: conforms" in text and "lru: conforms" in text, text
    document = json.loads((tmp_path / "v.json").read_text())
    assert document["verdict"] == "pass" and document["calls"] >= 30000
    verdicts = {p["profile"]: p["verdict"] for p in document["profiles"]}
    # (an R3 policy: no release's in-tree policy to compare it with)
    assert verdicts == {"core": "conforms", "lru": "conforms"}, verdicts
    # A PASS is an observation: evictions were compared, in both profiles.
    assert document["exercised"]["EVICT-EXACT-N"] > 0
    assert document["exercised"]["LRU-EVICT-ORDER"] > 0


@pytest.mark.parametrize("h", FAULTS, ids=lambda h: h.path.stem)
def test_a_faulty_policy_fails_under_its_id_offline_and_online(
    h: Header, tmp_path: Path
) -> None:
    out = tmp_path / "h.jsonl"
    # As the profile's vLLM release drives it (a 0.33 fault may be one of touch).
    guard = _record(h.path, out, api=get_profile(h.profile).api)
    verdict = judge_paths([out])
    profile = next(p for p in verdict.profiles if p.profile == h.profile)
    expected = h.requirement
    if LEVELS.get(expected) == "SHOULD":
        shown = {v.requirement for v in profile.should}
    else:
        first = profile.first
        shown = set() if first is None else {first.requirement, first.culprit}
    if h.path.stem in HISTORY_GAPS:
        assert expected not in shown, "the judge names it now: delete the HISTORY_GAPS entry"
        pytest.xfail(HISTORY_GAPS[h.path.stem])
    assert expected in shown | h.also or shown & h.also, (expected, shown, profile.first)
    if h.profile == "core" and LEVELS.get(expected) == "MUST":
        online = [v for v in guard.violations if v.kind == "policy"]  # type: ignore[attr-defined]
        assert online, "check mode reported nothing online"
        assert profile.first is not None
        assert online[0].requirement == profile.first.requirement
        assert online[0].call == profile.first.call


@pytest.mark.parametrize(("target", "profile", "other"), [
    ("policyspec.reference.arc:ARCCachePolicy", "arc", "lru-0.33"),
    ("policyspec.reference.lru033:LRU033CachePolicy", "lru-0.33", "arc"),
    ("policyspec.reference.arc:ARC034CachePolicy", "arc-0.34", "lru-0.34"),
    ("policyspec.reference.lru034:LRU034CachePolicy", "lru-0.34", "arc-0.34"),
])
def test_the_reference_of_an_exact_release_profile_conforms_to_it(
    target: str, profile: str, other: str, tmp_path: Path
) -> None:
    """Recorded as its release's manager drives it (vLLM 0.33's or 0.34's),
    judged by default with that release's exact profiles."""
    out = tmp_path / "h.jsonl"
    record(target, str(out), calls=CALLS, seed=SEED, capacity=CAPACITY,
           api=get_profile(profile).api)
    verdict = judge_paths([out])
    found = {p.profile: p for p in verdict.profiles}
    assert found["core"].conforms and found[profile].conforms, found[profile].first
    assert found[other].first is not None  # the two orders differ, and the judge sees it


@pytest.mark.parametrize("h", CORRECTS, ids=lambda h: h.path.stem)
def test_a_correct_policy_conforms_to_core(h: Header, tmp_path: Path) -> None:
    out = tmp_path / "h.jsonl"
    _record(h.path, out, mode="record")
    verdict = judge_paths([out])
    core, lru = verdict.profiles[:2]
    assert core.first is None, core.first
    assert verdict.caller is None, verdict.caller
    should = set(filter(None, h.fields.get("should", "").split(",")))
    assert {v.requirement for v in core.should} <= should
    if h.fields.get("lru") == "pass":
        assert lru.conforms, lru.first
    elif lru.first is not None:
        assert lru.first.requirement.startswith("LRU-"), lru.first


@pytest.mark.parametrize("stem", ["v01_ignores_protected", "evict_returns_copies",
                                  "touch_walks_forward", "g07_busy_blocks_fall_out"])
def test_the_window_replays_the_failure_and_the_reference_passes_it(
    stem: str, tmp_path: Path
) -> None:
    path = FAULTY / f"{stem}.py"
    out = tmp_path / "h.jsonl"
    _record(path, out, mode="record")
    verdict = judge_paths([out])
    failing = next(p for p in verdict.profiles if p.first is not None)
    assert failing.first is not None
    case = window_case([out], failing.first, window=64)
    assert case["exposes"] == failing.first.requirement
    from test_corpus import load_policy

    faulty = replay_case(subject_for_class(load_policy(path)), case)
    assert not faulty.passed, case
    reference = replay_case(subject_for_class(LRUCachePolicy), case)
    assert reference.passed, reference.message


def test_check_history_writes_the_window_as_a_vector_file_replay_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "h.jsonl"
    _record(FAULTY / "touch_walks_forward.py", out, mode="record")
    cases = tmp_path / "cases"
    assert main(["check-history", str(out)]) == 0  # the gate is core
    text = capsys.readouterr().out
    assert "core: conforms" in text
    assert "lru: no, LRU-EVICT-ORDER (likely LRU-TOUCH-ORDER) at call" in text, text
    assert main(["check-history", str(out), "--profile", "lru", "--cases", str(cases)]) == 1
    target = f"{FAULTY / 'touch_walks_forward.py'}:Policy"
    assert main(["replay", str(cases), target, "--profile", "lru", "-q"]) == 1
    assert main(["replay", str(cases), REFERENCE, "--profile", "lru", "-q"]) == 0


def test_rotated_segments_are_one_history_and_a_suffix_is_judged_from_its_header(
    tmp_path: Path
) -> None:
    from policyspec.guard import GuardPolicy
    from policyspec.vllm.manager import OffloadingManagerEmulation
    from policyspec.vllm.traffic import TrafficConfig, drive

    out = tmp_path / "h.jsonl"
    guard = GuardPolicy(CAPACITY, target=REFERENCE, history=out, max_bytes=40_000, segments=50)
    drive(OffloadingManagerEmulation(guard, CAPACITY), TrafficConfig(seed=2, requests=400))
    guard.close()
    segments = sorted(tmp_path.glob("h.jsonl*"))
    assert len(segments) > 3
    whole = judge_paths([out])
    assert whole.passed and not whole.gaps
    assert whole.calls == guard.calls
    later = judge_paths([segments[2]])  # the first two deleted, say
    assert later.passed and not later.gaps
    assert later.calls < whole.calls
    assert later.exercised["LRU-EVICT-ORDER"] > 0  # the idle order came from the header


def test_old_segments_are_deleted_beyond_the_limit(tmp_path: Path) -> None:
    from policyspec.guard import GuardPolicy
    from policyspec.vllm.manager import OffloadingManagerEmulation
    from policyspec.vllm.traffic import TrafficConfig, drive

    out = tmp_path / "h.jsonl"
    guard = GuardPolicy(CAPACITY, target=REFERENCE, history=out, max_bytes=20_000, segments=3)
    drive(OffloadingManagerEmulation(guard, CAPACITY), TrafficConfig(seed=2, requests=1000))
    guard.close()
    kept = sorted(tmp_path.glob("h.jsonl*"))
    assert guard.writer.segment >= 4
    assert len(kept) == 3 and out not in kept
    verdict = judge_paths(kept)
    assert verdict.passed and not verdict.gaps


def _history(tmp_path: Path, *records: object, capacity: int = 4) -> Path:
    path = tmp_path / "hand.jsonl"
    head = fmt.header(capacity=capacity, target="hand", api="R9", mode="record")
    path.write_text(json.dumps(head) + "\n" + "".join(json.dumps(r) + "\n" for r in records))
    return path


def test_the_caller_side_is_judged_too(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    twice = _history(tmp_path, [fmt.INSERT, 0, 5, -1, 0, 0], [fmt.INSERT, 0, 6, -1, 0, 0])
    assert main(["check-history", str(twice)]) == 1
    assert "caller contract: broken, can_insert at call 1" in capsys.readouterr().out
    finished = _history(tmp_path, [fmt.FINISH, 3, 0, [], [], []], [fmt.FINISH, 3, 0, [], [], []])
    verdict = judge_paths([finished])
    assert verdict.caller is not None and verdict.caller.requirement == "can_finish"
    assert verdict.caller.call == 1
    pinned = _history(tmp_path, [fmt.INSERT, 0, 5, -1, 0, 0], [fmt.MARK_NON_EVICTABLE, 0, -1])
    caller = judge_paths([pinned]).caller
    assert caller is not None and caller.requirement == "can_mark_non_evictable"


def test_a_policy_answer_in_a_hand_written_history_is_named(tmp_path: Path) -> None:
    path = _history(tmp_path,
                    [fmt.INSERT, 0, 5, -1, 0, 0], [fmt.MARK_EVICTABLE, 0, 0],
                    [fmt.INSERT, 1, 6, -1, 0, 0],
                    [fmt.EVICT, 1, [], [1, 6, -1]])  # the in-flight key
    verdict = judge_paths([path])
    core = verdict.profiles[0]
    assert core.first is not None
    assert (core.first.requirement, core.first.call) == ("EVICT-IDLE-ONLY", 3)


def test_a_refusal_names_the_eligible_keys_in_words(tmp_path: Path) -> None:
    path = _history(tmp_path,
                    [fmt.INSERT, 0, 5, -1, 0, 0], [fmt.MARK_EVICTABLE, 0, 0],
                    [fmt.EVICT, 1, []])  # None while key 0 is idle
    should = judge_paths([path]).profiles[0].should  # (a SHOULD of core)
    assert [v.requirement for v in should] == ["EVICT-LIVENESS"]
    assert "while 1 key was eligible;" in should[0].message, should[0].message


def test_a_file_that_is_not_a_history_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "x.jsonl"
    other.write_text('{"schema":"policyspec-history/2"}\n')
    assert main(["check-history", str(other)]) == 2
    assert "policyspec-history/2" in capsys.readouterr().err
    assert main(["check-history", str(tmp_path / "missing.jsonl")]) == 2


def test_an_unjudged_profile_is_never_reported_as_conforming(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "ref.jsonl"
    _record(FAULTY / "v01_ignores_protected.py", out, mode="record", calls=2000)
    report = tmp_path / "r.json"
    # By the verdict rule of every command: unjudged (3), with its report.
    assert main(["check-history", str(out), "--profile", "cost", "--json-report",
                 str(report)]) == 3
    assert "cost: not judged" in capsys.readouterr().out
    document = json.loads(report.read_text())
    assert document["verdict"] == "unjudged" and document["verdict_reason"].startswith("cost: ")


def test_the_guard_returns_what_the_policy_returns_and_raise_mode_raises(
    tmp_path: Path
) -> None:
    from policyspec.guard import GuardPolicy, GuardViolation
    from policyspec.subject import Block

    guard = GuardPolicy(4, target=f"{FAULTY / 'evict_returns_iterator.py'}:Policy",
                        mode="check", on_violation="raise", history=tmp_path / "h.jsonl")
    chunk = Block(-1, 7)
    guard.insert(b"k", chunk)
    chunk.ref_cnt = 0
    guard.mark_evictable(b"k")
    assert guard.get(b"k") is chunk
    with pytest.raises(GuardViolation, match="EVICT-SHAPE at call 3"):
        guard.evict(1, set())
    guard.close()
    lines = (tmp_path / "h.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["schema"] == fmt.SCHEMA
    assert json.loads(lines[-1])[:3] == [fmt.EVICT, 1, []]
    record_mode = GuardPolicy(4, target=f"{FAULTY / 'evict_returns_iterator.py'}:Policy",
                              history=tmp_path / "r.jsonl")
    record_mode.insert(b"k", chunk)
    record_mode.mark_evictable(b"k")
    result = record_mode.evict(1, set())
    assert [key for key, _ in result] == [b"k"]  # the iterator was not consumed
    record_mode.close()


def test_calls_from_two_threads_are_marked_and_judged_as_one_history(tmp_path: Path) -> None:
    out = tmp_path / "h.jsonl"
    guard, stopped = record(REFERENCE, str(out), calls=5000, seed=SEED, capacity=CAPACITY,
                            two_threads=True)
    assert stopped is None
    markers = [json.loads(line) for line in out.read_text().splitlines()[1:]
               if line.startswith(f"[{fmt.THREAD},")]
    assert {m[1] for m in markers} == {0, 1}
    assert any(len(m) == 3 and isinstance(m[2], str) for m in markers)  # named once
    verdict = judge_paths([out], ("core", "lru"))
    assert verdict.passed and verdict.profiles[1].conforms
    assert verdict.calls == guard.calls


def test_the_guard_passes_on_a_result_that_is_not_a_chunk_and_the_judge_names_it(
    tmp_path: Path
) -> None:
    from policyspec.guard import GuardPolicy
    from policyspec.subject import Block

    class Odd(LRUCachePolicy[object, object]):
        def get(self, key: object) -> object:
            found = super().get(key)
            return "not a chunk" if found is not None else None

    guard = GuardPolicy(4, target=Odd, history=tmp_path / "h.jsonl")
    guard.insert(b"k", Block(-1, 3))
    assert guard.get(b"k") == "not a chunk"  # passed on unchanged, nothing raised
    guard.close()
    core = judge_paths([tmp_path / "h.jsonl"]).profiles[0]
    assert core.first is not None and core.first.requirement == "GET-IDENTITY"


def test_a_history_that_cannot_be_written_stops_recording_not_the_policy(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from policyspec.guard import GuardPolicy
    from policyspec.subject import Block

    guard = GuardPolicy(4, target=REFERENCE, history=tmp_path / "h.jsonl")

    def full(text: str) -> None:
        raise OSError(28, "No space left on device")

    guard.writer.write = full  # type: ignore[method-assign]
    logging.getLogger("policyspec.guard").setLevel(logging.ERROR)
    guard.insert(b"k", Block(-1, 3))
    with caplog.at_level(logging.ERROR, logger="policyspec.guard"):
        guard.flush()
    assert "recording stops" in caplog.text
    assert guard.get(b"k") is not None  # the policy runs on
    guard.flush()
    guard.close()
