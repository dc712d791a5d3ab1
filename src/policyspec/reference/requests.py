"""What the 0.33 reference policies read from a request: its context
(state kept by type, key positions) and one head-to-tail order of its keys.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any, Protocol, TypeVar

__all__ = ["RequestContextLike", "head_to_tail"]

K = TypeVar("K", bound=Hashable)


class RequestContextLike(Protocol):
    """vLLM 0.33.0's ``ReqContext`` as a policy uses it."""

    def get_state(self, cls: type[Any], /) -> Any: ...
    def set_state(self, val: Any, /) -> None: ...
    def get_offload_key_position(self, key: Any, /) -> int | None: ...


def head_to_tail(key_groups: Iterable[Sequence[K]], req_context: RequestContextLike) -> list[K]:
    """Every group's keys as one list, group after group; sorted by end-token
    position (stably) when every key has one, else left as given."""
    keys = [key for group in key_groups for key in group]
    positions: dict[K, int] = {}
    for key in keys:
        position = req_context.get_offload_key_position(key)
        if position is None:
            return keys
        positions[key] = position
    return sorted(keys, key=positions.__getitem__)
