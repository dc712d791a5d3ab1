"""``policyspec simulate``'s measurements: traces played through policies at
several cache sizes, one cell of the grid at a time (spec/traffic.md,
"Simulate"). What a cell counts is deterministic (same trace and options,
same numbers); its call times are measured and kept apart, so that shards
and reruns compare on the counts. ``semantics`` chooses how much of the
manager plays the trace; a ``baseline`` makes the campaign a gate.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

import policyspec.hash_order as hash_order
from policyspec.adapters import load_subject
from policyspec.adapters.seed import unwrap
from policyspec.protocols import observation_hooks
from policyspec.releases import RELEASES, find
from policyspec.subject import Subject
from policyspec.vllm import standins
from policyspec.vllm.standins.gaps import raise_if_gap
from policyspec.workload.measure import TimedPolicy, owned_bytes
from policyspec.workload.player import SEMANTICS, Player, Timing, manager_class, play_in_turn
from policyspec.workload.ports import Chunk, driven_policy
from policyspec.workload.reader import read_trace

__all__ = [
    "REFERENCES",
    "SCHEMA",
    "Campaign",
    "Cell",
    "CellKey",
    "GateRow",
    "PolicyEntry",
    "TraceEntry",
    "campaign_key",
    "describe_trace",
    "gate",
    "gated_policies",
    "grid",
    "merge",
    "policies_for",
    "read_campaign",
    "run_cells",
]

SCHEMA = "policyspec-simulate/1"

REFERENCES: dict[str, tuple[tuple[str, str], ...]] = {
    r.revision: r.references for r in RELEASES if r.references}
"""The in-tree policies a target is compared with, by its revision, as each
release folder names them (policyspec.releases): vLLM 0.33.0's for R9,
0.34.0's for R10."""


def references_for(api: str) -> tuple[tuple[str, str], ...]:
    """The references of revision ``api``: its release's, else (a release
    whose folder names none) the newest older release's, else (a revision
    before every release, which the oldest release's manager plays) the
    oldest release's."""
    release = find(api)
    named = [r for r in RELEASES if r.references]
    if release is not None:
        older = [r for r in named if r.revision == api or r.version_key < release.version_key]
        if older:
            return older[-1].references
    return named[0].references


@dataclass(frozen=True)
class PolicyEntry:
    label: str
    target: str
    api: str


@dataclass(frozen=True)
class TraceEntry:
    path: str
    requests: int
    """Requests played (all, or the first ``--requests``)."""
    blocks: int
    sha256: str
    """Of the whole file: what tells two campaigns' traces apart."""


@dataclass(frozen=True)
class CellKey:
    index: int
    trace: int
    capacity: int
    policy: int


@dataclass
class Cell:
    """One cell's outcome (spec/traffic.md, "Simulate"). ``times`` holds what differs from
    run to run; everything else is deterministic."""

    index: int
    trace: str
    policy: str
    capacity: int
    requests: int = 0
    blocks: int = 0
    hit_blocks: int = 0
    hit_rate: float = 0.0
    blocks_stored: int = 0
    blocks_evicted: int = 0
    evict_calls: int = 0
    failed_evictions: int = 0
    stores_refused: int = 0
    deferred_lookups: int = 0
    policy_calls: int = 0
    memory_bytes: int = 0
    error: str | None = None
    times: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GateRow:
    """The target beside the baseline on one trace at one size. ``ratio``
    is the target's hit rate over the baseline's (None when the baseline
    hit nothing, or a cell stopped); ``passed`` is None without a
    ``fail_under``, and False when either cell stopped."""

    trace: str
    capacity: int
    target_hit_rate: float
    baseline_hit_rate: float
    ratio: float | None
    passed: bool | None


@dataclass
class Campaign:
    """Everything ``policyspec simulate`` reports (``SCHEMA``)."""

    traces: list[TraceEntry]
    capacities: list[int]
    policies: list[PolicyEntry]
    timing: Timing
    store_threshold: int
    request_limit: int | None
    shard: tuple[int, int]
    cells: list[Cell]
    semantics: str = "vllm"
    baseline: str | None = None
    """The label of the policy the target (the first policy) is gated on."""
    fail_under: float | None = None
    """The target fails at a size where its hit rate is below this times
    the baseline's."""

    def gate_verdict(self) -> str | None:
        """``pass``, ``fail``, or None when there is no ``fail_under``."""
        if self.baseline is None or self.fail_under is None:
            return None
        return "fail" if any(row.passed is False for row in gate(self)) else "pass"

    def to_json(self) -> dict[str, Any]:
        from policyspec.version import __version__

        return {
            "schema": SCHEMA,
            "policyspec_version": __version__,
            "traces": [asdict(t) for t in self.traces],
            "capacities": self.capacities,
            "policies": [asdict(p) for p in self.policies],
            "timing": asdict(self.timing),
            "store_threshold": self.store_threshold,
            "request_limit": self.request_limit,
            "shard": list(self.shard),
            "cells_total": len(self.traces) * len(self.capacities) * len(self.policies),
            "cells": [asdict(c) for c in self.cells],
            "semantics": self.semantics,
            "baseline": self.baseline,
            "fail_under": self.fail_under,
            "gate": [asdict(row) for row in gate(self)],
            "gate_verdict": self.gate_verdict(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Campaign:
        return cls(
            traces=[TraceEntry(**t) for t in data["traces"]],
            capacities=[int(c) for c in data["capacities"]],
            policies=[PolicyEntry(**p) for p in data["policies"]],
            timing=Timing(**data["timing"]),
            store_threshold=int(data["store_threshold"]),
            request_limit=data["request_limit"],
            shard=(int(data["shard"][0]), int(data["shard"][1])),
            cells=[Cell(**c) for c in data["cells"]],
            semantics=str(data.get("semantics", "vllm")),
            baseline=data.get("baseline"),
            fail_under=data.get("fail_under"),
        )


def campaign_key(data: dict[str, Any]) -> tuple[Any, ...]:
    """What the shards of one campaign share (their JSON)."""
    return (
        tuple(t["sha256"] for t in data["traces"]),
        tuple(data["capacities"]),
        tuple((p["label"], p["target"]) for p in data["policies"]),
        tuple(sorted(data["timing"].items())),
        data["store_threshold"],
        data["request_limit"],
        data["shard"][1],
        data.get("semantics", "vllm"),
        data.get("baseline"),
        data.get("fail_under"),
    )


def describe_trace(path: str, limit: int | None) -> TraceEntry:
    """A trace checked whole (``TraceFormatError`` at its first bad line,
    even past ``limit``) and counted up to ``limit`` requests."""
    requests = blocks = 0
    for request in read_trace(path):
        if limit is None or requests < limit:
            requests += 1
            blocks += len(request.blocks)
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    return TraceEntry(path, requests, blocks, digest.hexdigest())


def policies_for(
    target: str | None, baseline: str | None = None
) -> list[tuple[PolicyEntry, Subject]]:
    """The target (``TargetError`` when it does not load), the baseline
    when one is given, then the in-tree policies of the revision whose
    manager plays the target; a policy of the same class as one listed
    before it is listed once, under the reference's label if it is one."""
    return gated_policies(target, baseline)[0]


def gated_policies(
    target: str | None, baseline: str | None
) -> tuple[list[tuple[PolicyEntry, Subject]], str | None]:
    """``policies_for``'s list, and the label the baseline is listed under
    (None without one)."""
    subject = load_subject(target) if target is not None else None
    references = references_for(subject.api if subject is not None else RELEASES[0].revision)
    chosen: list[tuple[PolicyEntry, Subject]] = []
    classes: list[type] = []
    names: list[str] = []

    def add(label: str, name: str, found: Subject, relabel: bool) -> int:
        own = _class_of(found)
        if own in classes or name in names:
            index = classes.index(own) if own in classes else names.index(name)
            if relabel:
                entry, kept = chosen[index]
                chosen[index] = (PolicyEntry(label, entry.target, entry.api), kept)
            return index
        if any(entry.label == label for entry, _ in chosen):
            label = name  # two files of one name: the whole target tells them apart
        classes.append(own)
        names.append(name)
        chosen.append((PolicyEntry(label, name, found.api), found))
        return len(chosen) - 1

    if target is not None and subject is not None:
        add(target.rsplit("/", 1)[-1], target, subject, False)
    gated = None
    if baseline is not None:
        gated = add(baseline.rsplit("/", 1)[-1], baseline, load_subject(baseline), False)
    for label, reference in references:
        add(label, reference, load_subject(reference), True)
    return chosen, None if gated is None else chosen[gated][0].label


def _class_of(subject: Subject) -> type:
    return type(unwrap(subject.build(4)))


def gate(campaign: Campaign) -> list[GateRow]:
    """The target (the first policy) beside ``campaign.baseline`` on each
    trace at each size whose two cells were played here (all of them, but
    in a shard), in grid order; empty without a baseline. The comparison
    is of blocks hit, exact: both cells named the same blocks."""
    if campaign.baseline is None or not campaign.policies:
        return []
    target = campaign.policies[0].label
    cells = {(c.trace, c.capacity, c.policy): c for c in campaign.cells}
    rows = []
    for trace in campaign.traces:
        for capacity in campaign.capacities:
            mine = cells.get((trace.path, capacity, target))
            other = cells.get((trace.path, capacity, campaign.baseline))
            if mine is None or other is None:
                continue
            stopped = mine.error is not None or other.error is not None
            ratio = (None if stopped or other.hit_blocks == 0
                     else round(mine.hit_blocks / other.hit_blocks, 6))
            passed = None
            if campaign.fail_under is not None:
                passed = not stopped and mine.hit_blocks >= campaign.fail_under * other.hit_blocks
            rows.append(GateRow(trace.path, capacity, mine.hit_rate, other.hit_rate, ratio,
                                passed))
    return rows


def grid(
    traces: Sequence[TraceEntry], capacities: Sequence[int], policies: Sequence[PolicyEntry],
    shard: tuple[int, int] = (1, 1),
) -> list[CellKey]:
    """The cells of this shard, in grid order (spec/traffic.md, "Simulate")."""
    index, total = shard
    keys = []
    n = 0
    for t in range(len(traces)):
        for capacity in capacities:
            for p in range(len(policies)):
                if n % total == index - 1:
                    keys.append(CellKey(n, t, capacity, p))
                n += 1
    return keys


def _run_cell(
    key: CellKey, trace: TraceEntry, policy: PolicyEntry, subject: Subject, timing: Timing,
    store_threshold: int, limit: int | None, semantics: str = "vllm",
) -> Cell:
    if semantics not in SEMANTICS:
        raise ValueError(f"unknown semantics {semantics!r} (one of {', '.join(SEMANTICS)})")
    cell = Cell(key.index, trace.path, policy.label, key.capacity)
    started = time.process_time()
    timed = TimedPolicy(driven_policy(subject, key.capacity), observation_hooks(subject.api))
    manager = manager_class(subject.api)(timed, key.capacity, store_threshold=store_threshold,
                                         chunk_type=Chunk)
    read = read_trace(trace.path)
    requests = islice(read, limit) if limit is not None else read
    player = Player(manager, requests, timing=timing, new_context=_context_type())
    try:
        if semantics == "vllm":
            counts = player.run()
        else:
            counts = play_in_turn(manager, requests, semantics=semantics,
                                  chunk_blocks=timing.chunk_blocks,
                                  new_context=_context_type(), counts=player.counts)
    except Exception as exc:  # the policy's fault, or the manager's check of it
        raise_if_gap(exc)
        counts = player.counts
        cell.error = (f"after {counts.requests:,} requests: {type(exc).__name__}: {exc}"
                      .splitlines()[0])
    cell.requests, cell.blocks = counts.requests, counts.blocks
    cell.hit_blocks, cell.hit_rate = counts.hit_blocks, round(counts.hit_rate, 6)
    cell.blocks_stored, cell.blocks_evicted = counts.blocks_stored, counts.blocks_evicted
    cell.stores_refused, cell.deferred_lookups = counts.stores_refused, counts.deferred
    cell.failed_evictions = timed.failed_evictions
    evicts = timed.histograms.get("evict")
    cell.evict_calls = evicts.count if evicts is not None else 0
    total = timed.total()
    cell.policy_calls = total.count
    cell.memory_bytes = owned_bytes(timed.policy, _vllm_types())
    cell.times = {
        "cell_cpu_seconds": round(time.process_time() - started, 3),
        "policy_seconds": round(total.total / 1e9, 3),
        "call_ns": {"median": total.quantile(0.5), "p99": total.quantile(0.99)},
        "call_ns_by_method": {
            name: {"calls": h.count, "median": h.quantile(0.5), "p99": h.quantile(0.99)}
            for name, h in sorted(timed.histograms.items()) if h.count
        },
    }
    return cell


def _context_type() -> Callable[[str], Any]:
    from policyspec.adapters.blocks import req_context_class

    return req_context_class()


def _vllm_types() -> tuple[type, ...]:
    """vLLM's own chunk and context types, when vLLM is installed."""
    if not standins.vllm_importable():
        return ()
    try:
        from vllm.v1.kv_offload.base import ReqContext  # type: ignore[import-not-found]
        from vllm.v1.kv_offload.cpu.policies.base import (  # type: ignore[import-not-found]
            ChunkStatus,
        )
    except ImportError:
        return ()
    return (ChunkStatus, ReqContext)


_WORK: dict[str, Any] = {}
"""What a worker plays: the campaign and the subjects of its policies."""


def _load(campaign: Campaign, subjects: dict[str, Subject] | None) -> None:
    """A worker's set-up: the subjects given, or loaded from the targets."""
    if subjects is None:
        subjects = {p.label: load_subject(p.target) for p in campaign.policies}
    _WORK.update(campaign=campaign, subjects=subjects)


def _spawned(data: dict[str, Any]) -> None:
    _load(Campaign.from_json(data), None)


def _work(key: CellKey) -> Cell:
    campaign: Campaign = _WORK["campaign"]
    policy = campaign.policies[key.policy]
    with standins.installed():
        return _run_cell(key, campaign.traces[key.trace], policy,
                         _WORK["subjects"][policy.label], campaign.timing,
                         campaign.store_threshold, campaign.request_limit, campaign.semantics)


def run_cells(
    campaign: Campaign, subjects: dict[str, Subject], *, jobs: int = 1,
    progress: Callable[[Cell], None] | None = None,
) -> Campaign:
    """Run this shard's cells into ``campaign.cells``, in grid order.

    A policy may hash its keys (``hash(bytes)`` differs from process to
    process unless ``PYTHONHASHSEED`` is set), so for the same numbers on
    every run the cells are played where the hash seed is fixed
    (policyspec.hash_order; the command always is): in this process
    (``jobs`` 1) or forked workers when it is, else in ``jobs`` fresh
    processes started with the fixed seed (library use)."""
    keys = grid(campaign.traces, campaign.capacities, campaign.policies, campaign.shard)
    for cell in _cells(campaign, subjects, keys, jobs):
        campaign.cells.append(cell)
        if progress is not None:
            progress(cell)
    return campaign


def _cells(
    campaign: Campaign, subjects: dict[str, Subject], keys: list[CellKey], jobs: int
) -> Iterator[Cell]:
    fixed = hash_order.fixed()
    if fixed and (jobs <= 1 or len(keys) <= 1
                  or "fork" not in multiprocessing.get_all_start_methods()):
        _load(campaign, subjects)
        try:
            yield from map(_work, keys)
        finally:
            _WORK.clear()
        return
    if fixed:
        _load(campaign, subjects)
        try:
            with multiprocessing.get_context("fork").Pool(min(jobs, len(keys))) as pool:
                yield from pool.imap(_work, keys)
        finally:
            _WORK.clear()
        return
    before = os.environ.get(hash_order.ENV)
    os.environ[hash_order.ENV] = hash_order.HASH_SEED
    try:
        context = multiprocessing.get_context("spawn")
        pool = context.Pool(max(1, min(jobs, len(keys))), initializer=_spawned,
                            initargs=(campaign.to_json(),))
    finally:
        if before is None:
            del os.environ[hash_order.ENV]
        else:
            os.environ[hash_order.ENV] = before
    with pool:
        yield from pool.imap(_work, keys)


def read_campaign(path: str | Path) -> dict[str, Any]:
    """A simulate JSON report (``SCHEMA``), as data."""
    import json

    data: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    return data


def merge(shards: Sequence[tuple[str, dict[str, Any]]]) -> Campaign:
    """One campaign from its shards (path, JSON), each of them once;
    ``ValueError`` names the first that does not fit."""
    if not shards:
        raise ValueError("no shard to merge")
    first_path, first = shards[0]
    seen: dict[int, str] = {}
    for path, data in shards:
        if data.get("schema") != SCHEMA:
            raise ValueError(f"{path}: not a policyspec simulate report (schema "
                             f"{data.get('schema')!r}, expected {SCHEMA})")
        if campaign_key(data) != campaign_key(first):
            raise ValueError(f"{path}: a shard of another campaign than {first_path} (its "
                             "traces, sizes, policies, timing or number of shards differ)")
        index = int(data["shard"][0])
        if index in seen:
            raise ValueError(f"{path}: shard {index} again (also {seen[index]})")
        seen[index] = path
    total = int(first["shard"][1])
    missing = sorted(set(range(1, total + 1)) - set(seen))
    if missing:
        raise ValueError(f"shard {missing[0]} of {total} is missing")
    merged = Campaign.from_json(first)
    merged.shard = (1, 1)
    merged.cells = sorted((Cell(**c) for _, data in shards for c in data["cells"]),
                          key=lambda c: c.index)
    return merged
