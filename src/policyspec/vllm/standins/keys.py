"""Stand-in contents of ``vllm.v1.kv_offload.base`` (and the older
``...abstract``), ``vllm.v1.core.kv_cache_utils`` and ``vllm.logger``.

Written from vLLM's ``kv_offload/base.py`` (spec/contract.md): an ``OffloadKey`` is the block-hash
bytes followed by the KV group index as 4 big-endian unsigned bytes; a
``ReqContext`` carries the request id (and, since PR #51787, the end-token
position of each key so policies can order a request's keys; vLLM 0.33.0
adds ``kv_hints``, None here).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, NewType

__all__ = [
    "BlockHash",
    "OffloadKey",
    "ReqContext",
    "get_offload_block_hash",
    "get_offload_group_idx",
    "init_logger",
    "make_offload_key",
]

OffloadKey = NewType("OffloadKey", bytes)
BlockHash = NewType("BlockHash", bytes)

_GROUP_BYTES = 4


def make_offload_key(block_hash: bytes, group_idx: int) -> OffloadKey:
    """The key of block ``block_hash`` in KV group ``group_idx``."""
    return OffloadKey(bytes(block_hash) + group_idx.to_bytes(_GROUP_BYTES, "big", signed=False))


def get_offload_block_hash(key: OffloadKey) -> bytes:
    """The block-hash part of ``key``."""
    return bytes(key[:-_GROUP_BYTES])


def get_offload_group_idx(key: OffloadKey) -> int:
    """The KV group index of ``key``."""
    return int.from_bytes(key[-_GROUP_BYTES:], "big", signed=False)


@dataclass
class ReqContext:
    """What vLLM tells a policy about the request behind a call. As in
    vLLM 0.33.0 and 0.34.0: per-request state keyed by the value's type,
    each key's end-token position, and (0.34.0) token counts that the base
    class leaves None. vLLM's ``load_tier_filter`` (the tiering package's
    ``TierFilter``) is not modelled."""

    req_id: str
    kv_transfer_params: dict[str, Any] | None = None
    kv_hints: Any | None = None
    """vLLM 0.33.0: the request's KV hints envelope, None when it has none."""
    _state: dict[type, Any] = field(default_factory=dict, repr=False, init=False)
    _offload_key_positions: dict[bytes, int] = field(default_factory=dict, repr=False, init=False)

    # vLLM 0.34.0: the scheduler's token counts, None in the base class
    # (a subclass of the scheduler's gives them while the request runs).
    @property
    def num_computed_tokens(self) -> int | None:
        return None

    @property
    def num_in_flight_tokens(self) -> int | None:
        return None

    @property
    def num_prompt_tokens(self) -> int | None:
        return None

    @property
    def num_tokens(self) -> int | None:
        return None

    def set_state(self, val: Any) -> None:
        """Keep ``val`` as the request's state of its type (one per type)."""
        self._state[type(val)] = val

    def get_state(self, cls: type[Any]) -> Any:
        """The state of type ``cls`` set last, or None."""
        return self._state.get(cls)

    def set_offload_key_position(self, key: bytes, end_token: int) -> None:
        self._offload_key_positions[key] = end_token

    def get_offload_key_position(self, key: bytes) -> int | None:
        return self._offload_key_positions.get(key)


def init_logger(name: str) -> logging.Logger:
    """vLLM's logger factory, reduced to the standard library's."""
    return logging.getLogger(name)
