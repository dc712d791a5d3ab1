"""The reference LRU's abstraction pair, for ``policyspec prove``.

``to_model`` reads the model state out of an ``LRUCachePolicy``;
``from_model`` makes a freshly built one hold a given model state. With
them, ``prove`` checks each operation symbolically from any pre-state
(policyspec.prove.abstraction). Kept beside, not inside, lru.py: the
reference stays independent of the model it is checked against.

The OrderedDict is built inside ``from_model`` from the model's plain idle
list: CrossHair reasons about the list, and the keys it hands over are
concrete small ints (policyspec.prove.canonical says why).
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
