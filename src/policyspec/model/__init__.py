"""The executable specification of vLLM's CachePolicy (seed revision R3).

``state`` holds the data, ``preconditions`` the caller contract,
``operations`` the transitions with their postconditions, ``evict`` what an
eviction may return, ``actions`` the caller's actions and their legality,
``step`` a profile's model moving one call at a time, and what an exact
profile plugs into it (``Refinement``, spec/extending.md). Read spec/ beside
the code: ids match. What extensions use is exported here.
"""

from policyspec.model import operations
from policyspec.model.actions import Action, Primitive, expand, is_legal
from policyspec.model.evict import commit_evict, eligible, evict_violation, lru_victims
from policyspec.model.preconditions import (
    can_clear,
    can_end_read,
    can_evict,
    can_finish_store,
    can_get,
    can_insert,
    can_mark_evictable,
    can_mark_non_evictable,
    can_remove,
    can_start_read,
    can_touch,
)
from policyspec.model.request import Requests
from policyspec.model.state import (
    IDLE,
    IN_FLIGHT,
    State,
    is_idle,
    is_in_flight,
    is_present,
    is_quiescent,
    is_read,
    well_formed,
)
from policyspec.model.step import PREDICT, Diagnosis, ProfileModel, Refinement, Step

__all__ = [
    "IDLE",
    "IN_FLIGHT",
    "PREDICT",
    "Action",
    "Diagnosis",
    "Primitive",
    "ProfileModel",
    "Refinement",
    "Requests",
    "State",
    "Step",
    "can_clear",
    "can_end_read",
    "can_evict",
    "can_finish_store",
    "can_get",
    "can_insert",
    "can_mark_evictable",
    "can_mark_non_evictable",
    "can_remove",
    "can_start_read",
    "can_touch",
    "commit_evict",
    "eligible",
    "evict_violation",
    "expand",
    "is_idle",
    "is_in_flight",
    "is_legal",
    "is_present",
    "is_quiescent",
    "is_read",
    "lru_victims",
    "operations",
    "well_formed",
]
