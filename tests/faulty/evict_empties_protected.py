"""faulty: API-ARGS-UNCHANGED also=EVICT-UNPROTECTED engine=stateful,fast

``evict`` empties the caller's ``protected`` set before choosing, so it
both changes the caller's data and then takes a protected idle key like any
other. The shape of a fork that "consumes" the protected keys as it scans.
The engines' own data must stay theirs: before the engines copied their arguments, the
verdict of this policy under ``--isolate`` was ERROR (the manager engine's
Hypothesis search saw a report of the changed set left over from an earlier
example, FlakyStrategyDefinition) although the run had found both ids;
tests/test_argument_isolation.py checks it with and without ``--isolate``.
"""

from collections.abc import Collection
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if isinstance(protected, set):
            protected.clear()  # the fault: the caller's set, emptied
        return super().evict(n, protected)
