"""The executable specification of vLLM's CachePolicy (seed revision R3).

``state`` holds the data, ``preconditions`` the caller contract,
``operations`` the transitions with their postconditions, ``evict`` what an
eviction may return. Read spec/ beside the code: ids match.
"""

from policyspec.model import operations
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

__all__ = [
    "IDLE",
    "IN_FLIGHT",
    "State",
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
    "is_idle",
    "is_in_flight",
    "is_present",
    "is_quiescent",
    "is_read",
    "lru_victims",
    "operations",
    "well_formed",
]
