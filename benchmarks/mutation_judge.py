"""Whether a check's report blames the right requirement: each failure's
witness (the report's ``actions``, at its ``capacity``) is replayed on a
fresh policy in lockstep with the profile's model, and the requirement that
replay breaks first must be the one the report names (or one of its family:
an exact profile's wrong order and needless refusal are one fault).

Run by ``benchmarks/mutation.py`` in a child process whose ``PYTHONPATH``
is the scratch tree, so it imports the mutant, never the worktree's code:

    python benchmarks/mutation_judge.py REPORT.json TARGET PROFILE SEED

It prints one JSON object: ``{"failures": [{"requirement", "replayed",
"right", "note"}]}``, one entry per failure of the report.
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
        with policy_environment(seed=seed):
            found = replay(subject, profile, int(capacity), trace)
        if found is None:
            entry.update(right=False, note="the replay breaks no requirement")
            continue
        entry["replayed"] = found.requirement
        entry["right"] = found.requirement in family(profile, rid)
        if not entry["right"]:
            entry["note"] = f"the replay breaks {found.requirement} first: {found.message[:160]}"
    return judged


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
