"""A planted fault (spec/bugs.md V1): the model's evict with ``protected``
ignored, so a key the manager is about to reuse can be evicted. CrossHair
must report the postcondition ``evict_violation(...) is None`` as broken
(the verdict is EVICT-UNPROTECTED).

The contracts are those of ``policyspec.model.operations.evict``, word for
word; CrossHair evaluates them in this module's globals, hence the imports.
"""

from __future__ import annotations

from collections.abc import Collection

from policyspec.model.evict import commit_evict, evict_violation, lru_victims  # noqa: F401
from policyspec.model.preconditions import can_evict  # noqa: F401
from policyspec.model.state import State, well_formed  # noqa: F401


def evict(state: State, n: int, protected: Collection[int]) -> tuple[State, list[int] | None]:
    """The model's evict with the fault planted.

    pre: can_evict(state, n, protected)
    post: evict_violation(state, n, protected, __return__[1]) is None
    post: __return__[1] is not None or __return__[0] == state
    post: __return__[1] is None or __return__[0] == commit_evict(state, __return__[1])
    post: well_formed(__return__[0])
    """
    victims = lru_victims(state, n, ())  # FAULT: protected is not passed on
    if victims is None:
        return state.copy(), None
    return commit_evict(state, victims), victims
