"""Exit codes and the one exception for a user's mistake, shared by every
front end: 0 conforms / nothing found, 1 does not conform /
counterexample, 2 could not run (bad target, import error, missing methods,
bad arguments), 3 ran without finding a failure but left a MUST that applies
to the policy unjudged (``policyspec.reports.verdict``: not a pass, and not a
failure either, so a gate can tell the two apart), 4 incomplete (the time
limit, ``--time-limit``, stopped the run before its work was done and it
found no failure: neither a pass nor a fail), 130 interrupted (Ctrl-C) before
the command had a result to report.

``COMMAND_EXITS`` says which of them each command returns, and what each
means there: it is the one table the commands' ``--help`` is written from
(``policyspec.cli``), so a gate reading a command's help learns every code
it must handle."""

from __future__ import annotations

__all__ = [
    "COMMAND_EXITS", "EXIT_CONFORMS", "EXIT_FAILS", "EXIT_INCOMPLETE", "EXIT_INTERRUPTED",
    "EXIT_UNJUDGED", "EXIT_USAGE", "UsageError", "exits_help",
]

EXIT_CONFORMS = 0
EXIT_FAILS = 1
EXIT_USAGE = 2
EXIT_UNJUDGED = 3
EXIT_INCOMPLETE = 4
EXIT_INTERRUPTED = 130

_INTERRUPTED = "interrupted (Ctrl-C) before there was a result"

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
        EXIT_INTERRUPTED: _INTERRUPTED,
    },
    "new": {
        EXIT_CONFORMS: "written",
        EXIT_USAGE: "not written (PATH exists, is not a .py file or cannot be written, or a "
        "bad --class)",
        EXIT_INTERRUPTED: _INTERRUPTED,
    },
    "vectors": {
        EXIT_CONFORMS: "written, or (--check) DIR is up to date",
        EXIT_FAILS: "(--check) DIR differs from what the model generates now",
        EXIT_USAGE: "bad arguments (--check DIR is not a directory, --out DIR cannot be "
        "written)",
        EXIT_INTERRUPTED: _INTERRUPTED,
    },
    "replay": {
        EXIT_CONFORMS: "every case passes",
        EXIT_FAILS: "a case fails",
        EXIT_USAGE: "could not run (no vector file, bad target, or no case for the profile)",
        EXIT_INTERRUPTED: _INTERRUPTED,
    },
    "prove": {
        EXIT_CONFORMS: "no counterexample",
        EXIT_FAILS: "a counterexample (printed with its minimal trace and a pytest test)",
        EXIT_USAGE: "could not run",
        EXIT_INTERRUPTED: _INTERRUPTED,
    },
    "report": {
        EXIT_CONFORMS: "written, or (--merge) the merged campaign conforms",
        EXIT_FAILS: "(--merge) the merged campaign does not conform",
        EXIT_USAGE: "bad reports or arguments, or (--merge) the shards do not make one "
        "complete campaign",
        EXIT_UNJUDGED: "(--merge) a MUST that applies was not judged in any shard",
        EXIT_INTERRUPTED: _INTERRUPTED,
    },
    "record": {
        EXIT_CONFORMS: "the run completed",
        EXIT_FAILS: "the policy or the manager raised (the history is written up to that "
        "call) or, in check mode, a rule was broken",
        EXIT_USAGE: "bad target or arguments",
        EXIT_INTERRUPTED: _INTERRUPTED,
    },
    "check-history": {
        EXIT_CONFORMS: "conforms",
        EXIT_FAILS: "the gate profile fails or the caller contract is broken",
        EXIT_USAGE: "could not judge (a bad or unreadable history, a bad --profile)",
        EXIT_UNJUDGED: "the gate profile could not be judged",
        EXIT_INTERRUPTED: _INTERRUPTED,
    },
    "drift": {
        EXIT_CONFORMS: "a known API revision (or, with --record, recorded)",
        EXIT_FAILS: "it differs from every known revision (each difference printed)",
        EXIT_USAGE: "the vLLM cannot be read",
        EXIT_INTERRUPTED: _INTERRUPTED,
    },
    "simulate": {
        EXIT_CONFORMS: "done",
        EXIT_FAILS: "a policy stopped the play (raised, or broke the manager's checks)",
        EXIT_USAGE: "bad arguments or a bad trace line",
        EXIT_INTERRUPTED: _INTERRUPTED,
    },
}
"""Every command's exit codes and their meaning there, by the command's
name as typed (``check-history``)."""


def exits_help(command: str) -> str:
    """The exit codes of ``command`` as its ``--help`` lists them."""
    codes = COMMAND_EXITS[command]
    return "exit codes: " + "; ".join(f"{code} {meaning}" for code, meaning in codes.items()) + "."


class UsageError(Exception):
    """A mistake of the user: printed as one line, exit 2."""
