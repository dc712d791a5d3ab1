"""Exit codes and the one exception for a user's mistake, shared by every
front end (DESIGN.md): 0 conforms / nothing found, 1 does not conform /
counterexample, 2 could not run (bad target, import error, missing methods,
bad arguments)."""

from __future__ import annotations

__all__ = ["EXIT_CONFORMS", "EXIT_FAILS", "EXIT_USAGE", "UsageError"]

EXIT_CONFORMS = 0
EXIT_FAILS = 1
EXIT_USAGE = 2


class UsageError(Exception):
    """A mistake of the user: printed as one line, exit 2."""
