"""The reference LRU's abstraction pair, for ``policyspec prove``: reading
the model state out of an ``LRUCachePolicy`` and making a fresh one hold a
given state (spec/prove.md, "Hand-written pairs"). Kept beside, not inside,
lru.py, so that the reference stays independent of the model it is checked
against.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from policyspec.model.state import State
from policyspec.reference.lru import LRUCachePolicy

__all__ = ["from_model", "to_model"]


def to_model(policy: LRUCachePolicy[Any, Any]) -> State:
    """Present keys with their blocks' ref_cnt; idle keys in eviction order."""
    return State(
        {key: block.ref_cnt for key, block in policy.blocks.items()},
        list(policy.evictable_blocks),
        policy.cache_capacity,
    )


def from_model(policy: LRUCachePolicy[Any, Any], state: State, blocks: Mapping[int, Any]) -> None:
    """Fill a fresh ``policy`` so that ``to_model(policy)`` equals ``state``
    (its capacity aside)."""
    policy.blocks = {key: blocks[key] for key in state.refs}
    policy.evictable_blocks = OrderedDict.fromkeys(state.idle)
