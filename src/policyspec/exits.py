"""Exit codes and the one exception for a user's mistake, shared by every
front end (spec/design.md): 0 conforms / nothing found, 1 does not conform /
counterexample, 2 could not run (bad target, import error, missing methods,
bad arguments), 3 ran without finding a failure but left a MUST that applies
to the policy unjudged (``policyspec.reports.verdict``: not a pass, and not a
failure either, so a gate can tell the two apart), 4 incomplete (the time
limit, ``--time-limit``, stopped the run before its work was done and it
found no failure: neither a pass nor a fail)."""

from __future__ import annotations

__all__ = [
    "EXIT_CONFORMS", "EXIT_FAILS", "EXIT_INCOMPLETE", "EXIT_UNJUDGED", "EXIT_USAGE", "UsageError",
]

EXIT_CONFORMS = 0
EXIT_FAILS = 1
EXIT_USAGE = 2
EXIT_UNJUDGED = 3
EXIT_INCOMPLETE = 4


class UsageError(Exception):
    """A mistake of the user: printed as one line, exit 2."""
