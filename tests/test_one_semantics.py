"""One semantics. The model (``policyspec.model``) is the
only definition of a policy's behaviour. Two places re-implement part of it
in place, for speed: the fast engine's oracle (``engines.fast_oracle``) and the
history judge (``history.core.CoreJudge``), each for the profiles whose
order is core's own idle order (``history.judge.IN_PLACE``: core and the
seed LRU). Every other profile is judged by the model itself, in both (the
fast engine steps ``ProfileModel``; ``history.model_judge`` does too), so
it is derived, not re-implemented.

The two in-place copies are held equal to the model by differential tests
over every profile they serve: the oracle in tests/test_engine_fast.py
(its ``step`` against the model's on Hypothesis-drawn states and calls; the
driver against the model on the same runs), and the judge here: histories
the guard records of the corpus (faulty and correct policies, and the
references) are judged by ``CoreJudge`` and by ``ModelJudge`` (the
profile's model stepped along the same records). At every eviction both
must agree on the first MUST failure: its call and its id. The judge also
sees what the model, which knows keys and not blocks, cannot: the chunk
objects a policy returns (``BLOCK_LEVEL``), and what ``get`` answers
between evictions (GET-*, a lost key); those are outside the comparison.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from test_corpus import CORRECT, FAULTY, Header, corpus

from policyspec.commands.record import record
from policyspec.history import format as fmt
from policyspec.history.core import CoreJudge, Violation
from policyspec.history.judge import IN_PLACE, in_place_exact, read_segments
from policyspec.history.model_judge import ModelJudge
from policyspec.profiles import get_profile
from policyspec.registry import load_registry

CALLS = 1500
BLOCK_LEVEL = frozenset({"EVICT-IDENTITY", "EVICT-SHAPE", "BLOCK-NO-WRITE", "API-NO-RAISE"})
"""Ids the judge finds at an eviction from the chunks it returned (their
identity, the container, ref_cnt writes) or an exception: the model's
eviction is a set of keys."""

LEVELS = {rid: r.level for rid, r in load_registry().items()}


def _policies() -> list[tuple[str, Path | str]]:
    headers: list[Header] = [h for h in corpus(FAULTY) if h.profile in IN_PLACE]
    files = [(h.path.stem, h.path) for h in headers + corpus(CORRECT)]
    return [("reference-lru", "policyspec.reference.lru:LRUCachePolicy"), *files]


POLICIES = _policies()


@pytest.fixture(scope="module")
def histories(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    logging.getLogger("policyspec.guard").setLevel(logging.CRITICAL)
    out = tmp_path_factory.mktemp("histories")
    made: dict[str, Path] = {}
    for name, target in POLICIES:
        path = out / f"{name}.jsonl"
        spec = target if isinstance(target, str) else f"{target}:Policy"
        record(spec, str(path), calls=CALLS, seed=1, capacity=16, mode="record", api=None)
        made[name] = path
    return made


def _at_evictions(path: Path, profile: str, model_of: str | None = None
                  ) -> tuple[Violation | None, Violation | None]:
    """The first MUST failure at an eviction by the in-place judge of
    ``profile``, and the first failure of ``model_of``'s model (default:
    the same profile's), before the model stopped if it did."""
    [(header, records)] = [(h, list(r)) for h, r in read_segments([path])]
    ops = [r[0] for r in records if r[0] not in fmt.MARKERS]
    found: list[Violation] = []
    ordered = in_place_exact() if profile != "core" else None
    CoreJudge(header.get("capacity"), ordered=ordered, sink=found.append).feed(records)
    model = ModelJudge(get_profile(model_of or profile), header)
    model.feed(records)
    end = model.call if model.stopped is not None else len(ops)
    allowed = ("core", profile)
    judged = [v for v in found if v.kind == "policy" and v.profile in allowed
              and ops[v.call] == fmt.EVICT and LEVELS.get(v.requirement) == "MUST"
              and v.requirement not in BLOCK_LEVEL and v.call <= end]
    return min(judged, key=lambda v: v.call, default=None), model.first


@pytest.mark.parametrize("profile", IN_PLACE)
def test_the_in_place_judge_and_the_model_agree_at_every_eviction(
        profile: str, histories: dict[str, Path]) -> None:
    disagree = []
    failed = 0
    for name, path in histories.items():
        mine, theirs = _at_evictions(path, profile)
        seen = [(v.call, v.requirement) if v else None for v in (mine, theirs)]
        if seen[0] != seen[1]:
            disagree.append(f"{name}: in place {seen[0]}, model {seen[1]}")
        failed += theirs is not None
    assert not disagree, "\n".join(disagree)
    assert failed >= 5, "the histories must show model failures to compare"


def test_the_comparison_tells_two_semantics_apart(histories: dict[str, Path]) -> None:
    """The comparison can fail: core's in-place judge against the seed
    LRU's model disagrees on a policy that keeps core but not the order."""
    mine, theirs = _at_evictions(histories["touch_walks_forward"], "core", model_of="lru")
    assert mine is None and theirs is not None and theirs.requirement.startswith("LRU-")
