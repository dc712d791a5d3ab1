"""Judging a recorded history without the policy (spec/history.md, "Judging a
history"): its records stream through ``CoreJudge`` in constant memory, and
each profile is said to conform or where it failed first, with a window
around the failure written as a case ``policyspec replay`` runs against the
policy. The first pass keeps no records, so the window is found in a second.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from policyspec.history import format as fmt
from policyspec.history.core import CoreJudge, Violation
from policyspec.history.model_judge import ModelJudge
from policyspec.profiles import Profile, get_profile

__all__ = [
    "IN_PLACE",
    "JUDGED_PROFILES",
    "ProfileVerdict",
    "Verdict",
    "in_place_exact",
    "judge_paths",
    "judged_profiles",
    "read_segments",
    "segments_of",
    "window_case",
]

def _in_place() -> tuple[str, ...]:
    """The profiles ``CoreJudge`` judges in place (and whose failures get a
    window): core, and every registered exact profile whose order is core's
    own idle order (``Refinement.keeps_idle_order``: the seed LRU's)."""
    from policyspec.registry import load_profile_entries

    exact = [name for name in load_profile_entries() if name != "core"
             and (r := get_profile(name).refinement) is not None and r.keeps_idle_order]
    return ("core", *exact)


IN_PLACE = _in_place()
"""Profiles ``CoreJudge`` judges in place (``_in_place``)."""


def in_place_exact() -> Profile | None:
    """The exact profile ``CoreJudge`` keeps the idle order of (the first of
    ``IN_PLACE`` after core), or None."""
    return get_profile(IN_PLACE[1]) if len(IN_PLACE) > 1 else None


def judged_profiles(api: str | None) -> tuple[str, ...]:
    """The profiles judged when none is named: core and the seed LRU in place
    (``CoreJudge``), and through their models (``ModelJudge``) the exact
    profiles of the vLLM release whose revision the history was recorded
    as (R9: lru-0.33 and arc; R10: lru-0.34 and arc-0.34; a history
    without a revision is R9's, the first the guard recorded; an older
    revision has no in-tree policy of a release to compare with). Any other
    profile with a refinement can be named."""
    from policyspec.registry import load_profile_entries

    revision = api or "R9"
    exact = tuple(e.name for e in load_profile_entries().values()
                  if e.refinement is not None and e.api == revision)
    return (*IN_PLACE, *exact)


JUDGED_PROFILES = judged_profiles("R9")
"""The profiles judged by default in a history recorded as R9 (vLLM 0.33)."""

_CHUNK = 1 << 20
"""Bytes of lines parsed by one ``json.loads`` (its records are what the
judge holds at once: about 60,000)."""


@dataclass
class ProfileVerdict:
    profile: str
    first: Violation | None = None
    judged: bool = True
    """False when the history did not let the judge observe this
    profile's own requirements (an lru verdict needs a compared eviction)."""
    note: str = ""
    should: list[Violation] = field(default_factory=list)
    """SHOULD ids broken (the first of each): reported, not failing."""

    @property
    def conforms(self) -> bool:
        return self.judged and self.first is None


@dataclass
class Verdict:
    calls: int
    profiles: list[ProfileVerdict]
    caller: Violation | None
    """The first breach of the caller contract (a manager bug), if any."""
    header: dict[str, Any]
    exercised: dict[str, int]
    counts: dict[str, int]
    gaps: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """The verdict of the gate: the first profile asked (core by
        default, the one profile of ``--profile``) holds, and the caller
        kept its contract. The other profiles say which exact models the
        history rules out (Elle's "which consistency models hold"); a
        policy need not be any of them."""
        gate = self.profiles[0] if self.profiles else None
        return self.caller is None and gate is not None and gate.first is None


def segments_of(paths: Sequence[str | Path]) -> list[Path]:
    """The files to read: each path given, followed by its rotated
    segments (``PATH.000001``, ...) when those exist and were not given."""
    found: list[Path] = []
    for p in paths:
        path = Path(p)
        if path not in found:
            found.append(path)
        for extra in sorted(path.parent.glob(path.name + ".[0-9][0-9][0-9][0-9][0-9][0-9]")):
            if extra not in found:
                found.append(extra)
    return found


def _header(file: IO[str], path: Path) -> dict[str, Any]:
    line = file.readline()
    try:
        header = json.loads(line)
    except ValueError:
        raise fmt.HistoryError(f"{path}:1: not a JSON header line") from None
    schema = header.get("schema") if isinstance(header, dict) else None
    if not isinstance(schema, str) or not schema.startswith("policyspec-history/"):
        raise fmt.HistoryError(f"{path}:1: header must carry \"schema\": \"{fmt.SCHEMA}\"")
    if schema != fmt.SCHEMA:
        raise fmt.HistoryError(f"{path}:1: schema {schema} is not {fmt.SCHEMA}, which this "
                               "version reads")
    found: dict[str, Any] = header
    return found


def _batches(file: IO[str], path: Path) -> Iterator[list[Any]]:
    """The records of a segment, in lists: the text is read in blocks of ``_CHUNK``
    bytes, cut at the last line end, and each block parsed by one
    ``json.loads`` of its lines joined into one array."""
    rest = ""
    number = 1
    while True:
        block = file.read(_CHUNK)
        if not block:
            break
        block = rest + block
        cut = block.rfind("\n") + 1
        rest = block[cut:]
        if cut <= 1:
            continue
        body = block[:cut - 1]
        try:
            batch = json.loads("[" + body.replace("\n", ",") + "]")
        except ValueError:
            batch = _line_by_line(body, path, number)
        number += body.count("\n") + 1
        yield batch
    if rest.strip():
        yield _line_by_line(rest, path, number)


def _records(file: IO[str], path: Path) -> Iterator[Any]:
    for batch in _batches(file, path):
        yield from batch


def _line_by_line(text: str, path: Path, number: int) -> list[Any]:
    """A block that did not parse as one: each line, to name the bad one."""
    batch = []
    for offset, line in enumerate(text.split("\n")):
        if not line.strip():
            continue
        try:
            batch.append(json.loads(line))
        except ValueError:
            raise fmt.HistoryError(f"{path}:{number + offset + 1}: not a JSON record: "
                                   f"{line[:80]!r}") from None
    return batch


def read_segments(paths: Sequence[Path], *, batches: bool = False
                  ) -> Iterator[tuple[dict[str, Any], Iterator[Any]]]:
    """Each segment's header and its records (read lazily; with
    ``batches``, lists of records)."""
    for path in paths:
        try:
            file = open(path, encoding="ascii")  # noqa: SIM115 (closed below)
        except OSError as exc:
            raise fmt.HistoryError(f"{path}: {exc.strerror}") from None
        with file:
            header = _header(file, path)
            yield header, (_batches if batches else _records)(file, path)


def _judge(header: dict[str, Any], sink: Any = None, ordered: Profile | None = None
           ) -> CoreJudge:
    return CoreJudge(header.get("capacity"), ordered=ordered,
                     first_call=header.get("first_call", 0),
                     generation=header.get("generation", 0), state=header.get("state"),
                     sink=sink)


def judge_paths(paths: Sequence[str | Path], profiles: Sequence[str] | None = None
                ) -> Verdict:
    """One streaming pass over a history (spec/history.md, "Judging a history"); ``profiles`` None:
    those of the history's revision (``judged_profiles``). The cyclic
    garbage collector is off meanwhile: records are acyclic lists, and its
    passes over each parsed block cost much of the time."""
    if profiles is None:
        for header, _ in read_segments(segments_of(paths)[:1]):
            profiles = judged_profiles(header.get("api"))
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _judge_paths(paths, profiles or judged_profiles(None))
    finally:
        if enabled:
            gc.enable()


def _judge_paths(paths: Sequence[str | Path], profiles: Sequence[str]) -> Verdict:
    files = segments_of(paths)
    # core alone needs no idle order; an in-place exact profile does
    ordered = in_place_exact() if any(n in IN_PLACE[1:] for n in profiles) else None
    judge: CoreJudge | None = None
    first_header: dict[str, Any] = {}
    gaps: list[str] = []
    models: dict[str, ModelJudge] = {}
    unjudged: dict[str, str] = {}
    for name in profiles:
        if name in IN_PLACE:
            continue
        try:
            profile = get_profile(name)
        except ValueError as exc:
            unjudged[name] = str(exc)
            continue
        if profile.refinement is None:
            unjudged[name] = "no refinement: its requirements are not about one history"
    for header, batches in read_segments(files, batches=True):
        if judge is None:
            judge = _judge(header, ordered=ordered)
            first_header = header
            models = {name: ModelJudge(get_profile(name), header) for name in profiles
                      if name not in IN_PLACE and name not in unjudged}
        elif header.get("first_call", judge.call + 1) != judge.call + 1:
            gaps.append(f"segment {header.get('segment')} starts at call "
                        f"{header.get('first_call')}, the one before ended at {judge.call}: "
                        "calls are missing; judged on from its header's state")
            fresh = _judge(header, ordered=ordered)
            fresh.first, fresh.counts, fresh.seen = judge.first, judge.counts, judge.seen
            fresh.listed, fresh.shut_idle = judge.listed, judge.shut_idle
            fresh.in_flight = judge.in_flight
            judge = fresh
            for model in models.values():
                if model.stopped is None:
                    model.stopped = f"calls are missing before call {header.get('first_call')}"
        for batch in batches:
            judge.feed(batch)
            for model in models.values():
                model.feed(batch)
    if judge is None:
        raise fmt.HistoryError("no history file given")
    found = list(judge.first.values())
    levels = _levels()
    musts = sorted((v for v in found if v.kind == "policy" and levels.get(v.requirement) !=
                    "SHOULD"), key=lambda v: v.call)
    shoulds = sorted((v for v in found if v.kind == "policy" and levels.get(v.requirement) ==
                      "SHOULD"), key=lambda v: v.call)
    policy = [_presence_culprit(files, v) if v.requirement == "GET-ABSENT" else v
              for v in musts]
    exercised = judge.exercised()
    caller = min((v for v in found if v.kind == "caller"), key=lambda v: v.call, default=None)
    verdicts: list[ProfileVerdict] = []
    for name in profiles:
        if name in unjudged:
            verdicts.append(ProfileVerdict(name, judged=False, note=unjudged[name]))
            continue
        allowed = ("core",) if name == "core" else ("core", name)
        first = next((v for v in policy if v.profile in allowed), None)
        verdict = ProfileVerdict(name, first, should=[v for v in shoulds
                                                    if v.profile in allowed])
        judged = models.get(name)
        if judged is not None:
            found_first = judged.first
            if found_first is not None and (first is None or found_first.call < first.call):
                verdict.first = first = found_first
            refinement = get_profile(name).refinement
            order = refinement.order_requirement if refinement is not None else ""
            if first is None and judged.stopped is not None:
                verdict.judged = False
                verdict.note = f"conforms up to call {judged.call:,}, then not judged: " \
                               f"{judged.stopped}"
            elif first is None and not judged.seen.get(order):
                verdict.judged = False
                verdict.note = f"no eviction was compared with the {name} order"
        if ordered is not None and name == ordered.name and first is None:
            assert ordered.refinement is not None
            if not exercised.get(ordered.refinement.order_requirement):
                verdict.judged = False
                verdict.note = f"no eviction was compared with the {name} order"
        if name == "core" and first is None and not exercised.get("EVICT-EXACT-N"):
            verdict.note = "no eviction returned victims: only gets and the caller side judged"
        verdicts.append(verdict)
    return Verdict(judge.call + 1 - first_header.get("first_call", 0), verdicts, caller,
                   first_header, exercised, dict(judge.counts), gaps)


def _levels() -> dict[str, str]:
    from policyspec.registry import load_registry

    return {rid: r.level for rid, r in load_registry().items()}


def _presence_culprit(files: Sequence[Path], violation: Violation) -> Violation:
    """A present key that ``get`` no longer finds was lost by some call
    after the last one that showed it present; the likely one is the last
    call that named the key (its presence requirement,
    ``model.step.PRESENCE_REQUIREMENT``). Found in a second pass over the
    files, only for such a failure."""
    from dataclasses import replace

    from policyspec.model.step import PRESENCE_REQUIREMENT

    k, end = violation.key, violation.call
    if k is None:
        return violation
    last: str | None = None
    call = -1
    for header, records in read_segments(files):
        call = header.get("first_call", call + 1) - 1
        for rec in records:
            op = rec[0]
            if op in fmt.MARKERS:
                continue
            call += 1
            if call >= end:
                break
            if op == fmt.RAISED:
                rec, op = rec[2], rec[2][0]
            if op == fmt.GET:
                continue
            if op == fmt.TOUCH:
                named = k in rec[1]
            elif op in fmt.HOOK_OPS or op in (fmt.EVICT, fmt.CLEAR):
                named = False  # they name whole requests: a hint too weak to blame
            else:
                named = rec[1] == k
            if named:
                last = fmt.op_name(op)
        if call >= end:
            break
    if last is None or last not in PRESENCE_REQUIREMENT:
        return violation
    rid = PRESENCE_REQUIREMENT[last]
    return replace(violation, culprit=rid, message=violation.message + f"; the last call "
                   f"naming key {k} was {last}: likely {rid} (a reading of the history, not "
                   "a proof)")


# -- the window, as a vector case ---------------------------------------------


class _Case:
    """Builds the calls of a vector case from the judge's state and records
    (spec/vectors.md): block ids are fresh per insert, expectations come
    from the judge's state before each call."""

    def __init__(self, judge: CoreJudge, exact: bool) -> None:
        self.judge = judge
        self.exact = exact
        self.calls: list[dict[str, Any]] = []
        self.block: dict[int, int] = {}
        """Present key -> its block id in the case."""
        self.next_block = 0
        self.skipped = 0

    def _new_block(self, k: int) -> int:
        self.next_block += 1
        self.block[k] = self.next_block
        return self.next_block

    def setup(self) -> None:
        """Calls that rebuild the judge's state: every present key
        inserted in flight, the keys being read made idle and pinned, then
        the idle keys made idle in their order."""
        j = self.judge
        for k in j.refs:
            self.calls.append({"op": "insert", "key": k,
                               "block": {"id": self._new_block(k), "ref_cnt": -1}})
        for k, ref in j.refs.items():
            if ref > 0:
                b = self.block[k]
                self.calls += [{"op": "set_ref", "id": b, "ref_cnt": 0},
                               {"op": "mark_evictable", "key": k},
                               {"op": "mark_non_evictable", "key": k},
                               {"op": "set_ref", "id": b, "ref_cnt": 1}]
        for k in j.idle:
            self.calls += [{"op": "set_ref", "id": self.block[k], "ref_cnt": 0},
                           {"op": "mark_evictable", "key": k}]

    def add(self, rec: Sequence[Any], last: bool) -> None:
        """The vector calls of one record, then the judge moves on it."""
        j = self.judge
        op = rec[0]
        if op == fmt.RAISED:
            rec = rec[2]
            op = rec[0]
        if op in fmt.MARKERS or op in fmt.HOOK_OPS:
            self.skipped += op in fmt.HOOK_OPS
        elif op == fmt.GET:
            k = rec[1]
            present = k in j.refs
            self.calls.append({"op": "get", "key": k,
                               "expect": {"block": self.block.get(k) if present else None}})
        elif op == fmt.INSERT:
            self.calls.append({"op": "insert", "key": rec[1],
                               "block": {"id": self._new_block(rec[1]), "ref_cnt": rec[3]}})
        elif op == fmt.REMOVE:
            self.calls.append({"op": "remove", "key": rec[1]})
        elif op == fmt.TOUCH:
            self.calls.append({"op": "touch", "keys": list(rec[1])})
        elif op == fmt.CLEAR:
            self.calls.append({"op": "clear"})
        elif op == fmt.MARK_EVICTABLE:
            b = self.block.get(rec[1])
            if b is not None:
                self.calls.append({"op": "set_ref", "id": b, "ref_cnt": 0})
            self.calls.append({"op": "mark_evictable", "key": rec[1]})
        elif op == fmt.MARK_NON_EVICTABLE:
            self.calls.append({"op": "mark_non_evictable", "key": rec[1]})
            b = self.block.get(rec[1])
            if b is not None:
                self.calls.append({"op": "set_ref", "id": b, "ref_cnt": 1})
        elif op == fmt.EVICT:
            self.calls.append(self._evict(rec, last))
        if not last:
            j.feed_one(rec)

    def _evict(self, rec: Sequence[Any], last: bool) -> dict[str, Any]:
        j = self.judge
        n, protected = rec[1], list(rec[2])
        shut = set(protected)
        eligible = [k for k in j.idle if k not in shut]
        call: dict[str, Any] = {"op": "evict", "n": n, "protected": protected}
        if n == 0:
            call["expect"] = {"victims": []}
        elif len(eligible) < n:
            call["expect"] = {"victims": None}
        elif self.exact:
            call["expect"] = {"victims": [[k, self.block[k]] for k in eligible[:n]]}
        elif last or len(rec) < 4 or rec[3].__class__ is str:
            call["expect"] = {"count": n, "any_of": [[k, self.block[k]] for k in eligible],
                              "none_level": "SHOULD"}
        else:  # the victims the policy chose (allowed, as it did not fail here)
            victims = rec[3][0::3]
            call["expect"] = {"count": n, "any_of": [[k, self.block[k]] for k in victims],
                              "none_level": "SHOULD"}
        return call


def window_case(
    paths: Sequence[str | Path], violation: Violation, *, window: int = 64, name: str = ""
) -> dict[str, Any]:
    """A vector case of the calls up to and including ``violation``'s: the
    last ``window`` calls, or from the call the violation goes back to
    (``since``) when that is further, after setup calls that rebuild the
    model's state at the window's start (spec/history.md, "Judging a history")."""
    end = violation.call
    start = max(0, end - window + 1)
    if violation.since is not None:
        start = min(start, violation.since)
    judge: CoreJudge | None = None
    case: _Case | None = None
    header0: dict[str, Any] = {}
    exact = violation.profile != "core"
    ordered = get_profile(violation.profile) if exact else None
    done = False
    for header, records in read_segments(segments_of(paths)):
        if judge is None:
            judge = _judge(header, sink=lambda v: None, ordered=ordered)
            header0 = header
        elif header.get("first_call", judge.call + 1) != judge.call + 1:
            judge = _judge(header, sink=lambda v: None, ordered=ordered)
            case = None
        for rec in records:
            op = rec[0]
            counted = op not in fmt.MARKERS
            at = judge.call + 1 if counted else judge.call
            if at < start or (case is None and not counted):
                judge.feed_one(rec)
                continue
            if case is None:
                case = _Case(judge, exact)
                case.setup()
            case.add(rec, last=at == end and counted)
            if at == end and counted:
                done = True
                break
        if done:
            break
    if case is None or not done:
        raise fmt.HistoryError(f"call {end} is not in the history")
    profile = violation.profile
    note = f"; {case.skipped} request-hook calls left out" if case.skipped else ""
    return {
        "name": name or f"history-call-{end}-{violation.requirement}",
        "profile": profile,
        "capacity": header0.get("capacity") or max(len(case.block), 1),
        "source": f"history {Path(paths[0]).name}, calls {start}..{end}",
        "exposes": violation.requirement,
        "description": f"{violation.requirement} at call {end:,}: the model's state at call "
                       f"{start:,} rebuilt, then the history's calls{note}",
        "calls": case.calls,
    }
