"""Whether a check's report blames the right requirement: each failure's
witness (the report's ``actions``, at its ``capacity``) is replayed on a
fresh policy in lockstep with the profile's model, and the model's check of
the requirement the report names (or of its family: an exact profile's
wrong order and needless refusal are one fault) must fail on it.

Run by ``benchmarks/mutation.py`` in a child process whose ``PYTHONPATH``
is the scratch tree, so it imports the mutant, never the worktree's code:

    python benchmarks/mutation_judge.py REPORT.json TARGET PROFILE SEED

It prints one JSON object: ``{"failures": [{"requirement", "replayed",
"right", "first", "diagnosed", "note"}]}``, one entry per failure of the report:
``replayed`` is the failure a replay that stops only for the named
requirement's family meets, ``first`` the first any MUST check meets, and
``diagnosed`` says the named check does not fail but the witness breaks the
exact profile's order, which the report blamed on an operation by probing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def judge(report: dict[str, Any], target: str, profile_name: str, seed: int
          ) -> list[dict[str, Any]]:
    from policyspec.adapters import load_subject
    from policyspec.assertions import family
    from policyspec.environment import policy_environment
    from policyspec.findings.manager_replay import MANAGER_IDS, manager_failure
    from policyspec.profiles import get_profile
    from policyspec.reports.trace_record import COSTLY_TO_REPLAY, decode_action
    from policyspec.witness.reproduce import failure_of

    profile = get_profile(profile_name)
    api = report.get("api")
    judged = []
    for failure in report.get("failures", []):
        rid = str(failure["requirement"])
        entry: dict[str, Any] = {"requirement": rid, "replayed": None, "right": None, "note": ""}
        judged.append(entry)
        actions = failure.get("actions") or []
        capacity = failure.get("capacity")
        if not actions:
            entry["note"] = "no trace to replay (a measurement)"
            continue
        if capacity is None:
            entry["note"] = "the report gives no capacity for the trace"
            continue
        if rid in COSTLY_TO_REPLAY:
            entry["note"] = f"{rid} is not replayed (its replay waits out a time limit)"
            continue
        trace = tuple(decode_action(a) for a in actions)
        # A fresh subject per replay: the policy's module state starts clean.
        subject = load_subject(target).fitted(api if isinstance(api, str) else profile.api)
        replay = manager_failure if rid in MANAGER_IDS else failure_of
        ids = family(profile, rid)
        with policy_environment(seed=seed):
            # As the snippet's assertion does: the named requirement's check
            # is what must fail; the others' failures are only noted.
            found = replay(subject, profile, int(capacity), trace, fatal=ids.__contains__)
        with policy_environment(seed=seed):
            first = replay(subject, profile, int(capacity), trace)
        entry["first"] = None if first is None else first.requirement
        entry["replayed"] = None if found is None else found.requirement
        entry["right"] = found is not None and found.requirement in ids
        order = refinement_ids(profile)
        # An exact profile sees a wrong order only at an evict; the report
        # then names the operation behind it, found by probing prefixes
        # (witness.explain.culprit): a diagnosis, not a check that fails.
        entry["diagnosed"] = (not entry["right"] and rid not in order
                              and entry["first"] in order)
        if not entry["right"]:
            broken = ("no requirement" if first is None
                      else f"{first.requirement} first ({first.message[:160]})")
            entry["note"] = f"the check of {rid} does not fail on the witness; it breaks {broken}"
    return judged


def refinement_ids(profile: Any) -> frozenset[str]:
    """The exact profile's order and liveness requirements (none for core)."""
    refinement = profile.refinement
    if refinement is None:
        return frozenset()
    return frozenset((refinement.order_requirement, refinement.liveness_requirement))


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print("usage: mutation_judge.py REPORT.json TARGET PROFILE SEED", file=sys.stderr)
        return 2
    path, target, profile, seed = argv
    report = json.loads(Path(path).read_text(encoding="utf-8"))
    print(json.dumps({"failures": judge(report, target, profile, int(seed))}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
