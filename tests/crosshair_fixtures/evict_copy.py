"""An unmodified copy of ``policyspec.model.operations.evict``: CrossHair must
find nothing here, so that a counterexample in the planted-fault sibling is
the fault's doing and not the copy's.

CrossHair evaluates the ``pre:``/``post:`` strings in the globals of the
module that defines the function, so every name the contracts use is
imported here, exactly as in operations.py.
"""

from __future__ import annotations

from collections.abc import Collection

from policyspec.model.evict import commit_evict, evict_violation, lru_victims  # noqa: F401
from policyspec.model.preconditions import can_evict  # noqa: F401
from policyspec.model.state import State, well_formed  # noqa: F401


def evict(state: State, n: int, protected: Collection[int]) -> tuple[State, list[int] | None]:
    """Copy of the model's evict, contracts included.

    pre: can_evict(state, n, protected)
    post: evict_violation(state, n, protected, __return__[1]) is None
    post: __return__[1] is not None or __return__[0] == state
    post: __return__[1] is None or __return__[0] == commit_evict(state, __return__[1])
    post: well_formed(__return__[0])
    """
    victims = lru_victims(state, n, protected)
    if victims is None:
        return state.copy(), None
    return commit_evict(state, victims), victims
