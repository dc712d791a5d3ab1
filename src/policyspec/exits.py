"""Exit codes and the one exception for a user's mistake, shared by every
front end (DESIGN.md): 0 conforms / nothing found, 1 does not conform /
counterexample, 2 could not run (bad target, import error, missing methods,
bad arguments), 3 incomplete (the time limit, ``--time-limit``, stopped the
run before its work was done and it found no MUST failure: neither a pass
nor a fail)."""

from __future__ import annotations

__all__ = ["EXIT_CONFORMS", "EXIT_FAILS", "EXIT_INCOMPLETE", "EXIT_USAGE", "UsageError"]

EXIT_CONFORMS = 0
EXIT_FAILS = 1
EXIT_USAGE = 2
EXIT_INCOMPLETE = 3


class UsageError(Exception):
    """A mistake of the user: printed as one line, exit 2."""
