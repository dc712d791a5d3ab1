"""Exit codes and the one exception for a user's mistake, shared by every
front end (spec/design.md, spec/report.md "Verdicts"): 0 conforms, 1 does
not conform or was interrupted, 2 could not run, 3 a MUST that applies was
not judged, 4 the time limit stopped the run first. ``COMMAND_EXITS`` is the
one table every command's ``--help`` is written from, so a gate learns each
code it must handle."""

from __future__ import annotations

__all__ = [
    "COMMAND_EXITS", "EXIT_CONFORMS", "EXIT_FAILS", "EXIT_INCOMPLETE", "EXIT_UNJUDGED",
    "EXIT_USAGE", "UsageError", "exits_help",
]

EXIT_CONFORMS = 0
EXIT_FAILS = 1
EXIT_USAGE = 2
EXIT_UNJUDGED = 3
EXIT_INCOMPLETE = 4

_INTERRUPTED = "interrupted (Ctrl-C)"

COMMAND_EXITS: dict[str, dict[int, str]] = {
    "check": {
        EXIT_CONFORMS: "conforms",
        EXIT_FAILS: "does not conform (a MUST failed, a SHOULD under --strict, or a "
        "--known-failing entry passes), or the run was interrupted",
        EXIT_USAGE: "could not run (bad target or arguments, or an engine error without a "
        "failure)",
        EXIT_UNJUDGED: "no failure, but a MUST that applies was not judged",
        EXIT_INCOMPLETE: "incomplete: --time-limit stopped the run before its work was done, "
        "without a failure",
    },
    "new": {
        EXIT_CONFORMS: "written",
        EXIT_FAILS: _INTERRUPTED,
        EXIT_USAGE: "not written (PATH exists, is not a .py file or cannot be written, or a "
        "bad --class)",
    },
    "vectors": {
        EXIT_CONFORMS: "written, or (--check) DIR is up to date",
        EXIT_FAILS: "(--check) DIR differs from what the model generates now",
        EXIT_USAGE: "bad arguments (--check DIR is not a directory, --out DIR cannot be "
        "written)",
    },
    "replay": {
        EXIT_CONFORMS: "every case passes",
        EXIT_FAILS: "a case fails",
        EXIT_USAGE: "could not run (no vector file, bad target, or no case for the profile)",
    },
    "prove": {
        EXIT_CONFORMS: "every obligation confirmed over all paths",
        EXIT_FAILS: "a counterexample (printed with its minimal trace and a pytest test)",
        EXIT_USAGE: "could not run, or CrossHair could not analyse an obligation",
        EXIT_UNJUDGED: "no counterexample, but paths left unexplored",
        EXIT_INCOMPLETE: "the deadline stopped it before every obligation was done",
    },
    "report": {
        EXIT_CONFORMS: "written, or (--merge) the merged campaign conforms",
        EXIT_FAILS: "(--merge) the merged campaign does not conform",
        EXIT_USAGE: "bad reports or arguments, or (--merge) the shards do not make one "
        "complete campaign",
        EXIT_UNJUDGED: "(--merge) a MUST that applies was not judged in any shard",
    },
    "record": {
        EXIT_CONFORMS: "the run completed",
        EXIT_FAILS: "the policy or the manager raised (the history is written up to that "
        "call) or, in check mode, a rule was broken",
        EXIT_USAGE: "bad target or arguments",
    },
    "check-history": {
        EXIT_CONFORMS: "conforms",
        EXIT_FAILS: "the gate profile fails or the caller contract is broken",
        EXIT_USAGE: "could not judge (a bad or unreadable history, a bad --profile)",
        EXIT_UNJUDGED: "the gate profile could not be judged (or nothing could be)",
    },
    "drift": {
        EXIT_CONFORMS: "a known API revision (or, with --record, recorded)",
        EXIT_FAILS: "it differs from every known revision (each difference printed)",
        EXIT_USAGE: "the vLLM cannot be read",
    },
    "simulate": {
        EXIT_CONFORMS: "done",
        EXIT_FAILS: "a policy stopped the play (raised, or broke the manager's checks)",
        EXIT_USAGE: "bad arguments or a bad trace line",
    },
}
"""Every command's exit codes and their meaning there, by the command's
name as typed (``check-history``)."""
for _codes in COMMAND_EXITS.values():  # one rule: an interrupted run is not a pass
    if "interrupted" not in _codes[EXIT_FAILS]:
        _codes[EXIT_FAILS] += f", or {_INTERRUPTED}"


def exits_help(command: str) -> str:
    """The exit codes of ``command`` as its ``--help`` lists them."""
    codes = COMMAND_EXITS[command]
    return "exit codes: " + "; ".join(f"{code} {meaning}" for code, meaning in codes.items()) + "."


class UsageError(Exception):
    """A mistake of the user: printed as one line, exit 2."""
