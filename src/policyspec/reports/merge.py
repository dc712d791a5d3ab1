"""One verdict from the shards of one campaign (``policyspec report
--merge``): the reports of ``check --shard K/N`` for K = 1..N, combined.

A campaign is fixed by its target, profile, API revision, seed, strictness,
capacity, engines (with the exhaustive engine's bounds), N and the versions
of tool and spec; shards of different campaigns, or a set with a shard
missing or given twice, are refused. What is combined, and how, is in
spec/report.md ("Merging shards"): counts of work sum, each failure is kept
once (the shortest trace), statuses combine so that one failing shard fails
the requirement.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from policyspec.reports.report import FAIL, NA, NOT_TESTED, PASS, XFAIL, Report, RequirementStatus
from policyspec.reports.verdict import INCOMPLETE, INTERRUPTED, decide

__all__ = ["MergeError", "merge_reports", "shard_of"]

_PRECEDENCE = (FAIL, XFAIL, NA, PASS, NOT_TESTED)
"""A merged status is the first of these any shard reports: one failing
shard fails the requirement; n/a wins over pass as within one run."""

_SUMMED = frozenset({"calls", "steps", "examples", "seconds", "sequences", "maximal_sequences"})
"""Engine counts that add up over shards."""
_SAME = frozenset({"depth", "keys"})
"""Engine counts that describe the campaign: equal in every shard."""
_LARGEST = frozenset({"model_states", "largest_capacity", "largest_keys"})
"""Counts of distinct things that shards share: the merge keeps the largest,
a lower bound of the campaign's figure."""
_MEAN = frozenset({"mean_keys", "mean_idle"})
"""Means, combined weighted by each shard's calls."""


class MergeError(ValueError):
    """Reports that are not the complete shards of one campaign."""


def shard_of(report: Report) -> tuple[int, int]:
    """The (K, N) of a shard's report; (1, 1) for an unsharded run."""
    text = str(report.stats.get("shard", "1/1"))
    try:
        index, total = (int(part) for part in text.split("/"))
    except ValueError:
        raise MergeError(f"{report.target}: unreadable shard {text!r}") from None
    return index, total


def _campaign(report: Report) -> dict[str, Any]:
    s = report.stats
    engines = s.get("engines") or {}
    return {
        "target": report.target,
        "profile": report.profile,
        "api": report.api,
        "seed": s.get("seed"),
        "strict": bool(s.get("strict")),
        "capacity": s.get("capacity"),
        "shards": shard_of(report)[1],
        "engines": sorted(engines),
        "bounds": {name: {k: v for k, v in counts.items() if k in _SAME}
                   for name, counts in sorted(engines.items())},
        "policyspec version": report.policyspec_version,
        "spec version": report.spec_version,
    }


def _check_complete(reports: Sequence[Report], names: Sequence[str]) -> list[int]:
    if not reports:
        raise MergeError("no report to merge")
    first = _campaign(reports[0])
    for report, name in zip(reports[1:], names[1:], strict=True):
        for key, value in _campaign(report).items():
            if value != first[key]:
                raise MergeError(f"{name} is not a shard of the same campaign as {names[0]}: "
                                 f"{key} {value!r} differs from {first[key]!r}")
    total = first["shards"]
    seen: dict[int, str] = {}
    for report, name in zip(reports, names, strict=True):
        index = shard_of(report)[0]
        if index in seen:
            raise MergeError(f"shard {index}/{total} is given twice ({seen[index]} and {name})")
        seen[index] = name
        if any(r.status == XFAIL for r in report.requirements) or \
                "stale_known_failing" in report.stats:
            raise MergeError(f"{name} applied --known-failing; give the list to the merge "
                             "instead (a requirement may fail in one shard only)")
    missing = [k for k in range(1, total + 1) if k not in seen]
    if missing:
        listed = ", ".join(f"{k}/{total}" for k in missing)
        raise MergeError(f"shard{'s' if len(missing) > 1 else ''} {listed} "
                         f"{'are' if len(missing) > 1 else 'is'} missing: a merged verdict "
                         "needs every shard of the campaign")
    return [shard_of(r)[0] for r in reports]


def _merge_engines(ordered: Sequence[Report]) -> dict[str, dict[str, Any]]:
    merged: dict[str, dict[str, Any]] = {}
    for name in ordered[0].stats.get("engines") or {}:
        parts = [r.stats["engines"][name] for r in ordered]
        out: dict[str, Any] = {}
        for key in parts[0]:
            values = [p[key] for p in parts if key in p]
            if key in _SUMMED:
                total = sum(values)
                out[key] = round(total, 3) if isinstance(total, float) else total
            elif key in _SAME or key in _LARGEST:
                out[key] = max(values)
            elif key in _MEAN:
                weights = [p.get("calls", 0) for p in parts if key in p]
                weight = sum(weights)
                out[key] = round(sum(v * w for v, w in zip(values, weights, strict=True))
                                 / weight) if weight else values[0]
        merged[name] = out
    return merged


def _status(parts: Sequence[RequirementStatus]) -> RequirementStatus:
    checks = sum(p.checks for p in parts)
    for status in _PRECEDENCE:
        chosen = next((p for p in parts if p.status == status), None)
        if chosen is not None:
            return RequirementStatus(chosen.id, chosen.level, chosen.profile, chosen.title,
                                     status, checks, chosen.reason, chosen.applies)
    first = parts[0]
    return RequirementStatus(first.id, first.level, first.profile, first.title, first.status,
                             checks, first.reason, first.applies)


def merge_reports(reports: Sequence[Report], names: Sequence[str] = ()) -> Report:
    """The report of the whole campaign whose shards are ``reports``
    (``names``, e.g. file names, are used in error messages). Raises
    MergeError for reports that are not exactly the shards 1..N of one
    campaign."""
    labels = list(names) or [f"report {i + 1}" for i in range(len(reports))]
    indexes = _check_complete(reports, labels)
    ordered = [r for _, r in sorted(zip(indexes, reports, strict=True), key=lambda p: p[0])]
    total = len(ordered)
    ids = [r.id for r in ordered[0].requirements]
    for report in ordered[1:]:
        if [r.id for r in report.requirements] != ids:
            raise MergeError("the shards list different requirements")
    by_id = [{r.id: r for r in report.requirements} for report in ordered]
    requirements = [_status([statuses[rid] for statuses in by_id]) for rid in ids]

    best: dict[str, Any] = {}
    for report in ordered:
        for failure in report.failures:
            old = best.get(failure.requirement)
            if old is None or len(failure.trace) < len(old.trace):
                best[failure.requirement] = failure
    failures = sorted(best.values(), key=lambda f: (f.level != "MUST", f.requirement))

    errors = [f"shard {k}/{total}: {e}" for k, r in enumerate(ordered, 1) for e in r.errors]
    notes: list[str] = []
    for k, report in enumerate(ordered, 1):
        for note in report.notes:
            shared = all(note in other.notes for other in ordered)
            text = note if shared else f"shard {k}/{total}: {note}"
            if text not in notes:
                notes.append(text)
    engines = _merge_engines(ordered)
    for name, counts in engines.items():
        overlapping = sorted(k for k in counts if k in _LARGEST)
        if overlapping and total > 1:
            notes.append(f"{name}: {', '.join(overlapping)} is the largest shard's count, a lower "
                         "bound of the campaign's (shards reach overlapping sets)")
    strict = bool(ordered[0].stats.get("strict"))
    stopped = [f"shard {k}/{total}: {r.verdict_reason or 'incomplete'}"
               for k, r in enumerate(ordered, 1) if r.verdict == INCOMPLETE]
    verdict = decide(requirements, failures, strict=strict, errors=errors,
                     interrupted=any(r.verdict == INTERRUPTED for r in ordered),
                     incomplete="; ".join(stopped) if stopped else None)

    first = ordered[0].stats
    stats: dict[str, Any] = {
        "seed": first.get("seed"),
        "strict": strict,
        "seconds": round(sum(float(r.stats.get("seconds", 0.0)) for r in ordered), 3),
        "calls": sum(int(r.stats.get("calls", 0)) for r in ordered),
        "steps": sum(int(r.stats.get("steps", 0)) for r in ordered),
        "examples": sum(int(r.stats.get("examples", 0)) for r in ordered),
        "capacity": first.get("capacity"),
        "engines": engines,
        "merged_shards": [f"{k}/{total}" for k in range(1, total + 1)],
        "slowest_shard_seconds": max(float(r.stats.get("seconds", 0.0)) for r in ordered),
    }
    return Report(
        target=ordered[0].target,
        profile=ordered[0].profile,
        verdict=verdict.name,
        verdict_reason=verdict.reason,
        requirements=requirements,
        failures=failures,
        stats=stats,
        api=ordered[0].api,
        notes=notes,
        errors=errors,
        policyspec_version=ordered[0].policyspec_version,
        spec_version=ordered[0].spec_version,
        placeholders=list(dict.fromkeys(n for r in ordered for n in r.placeholders)),
    )
