"""The request level of vLLM 0.33 (spec/request.md): requests, their key
positions, and the caller contract of the request hooks. A request is named
by a small integer, like a key, and ``Requests`` holds only what the caller
contract needs to know of them (the keys each saw and missed in this cache
generation, whether it finished), as plain immutable data like the rest of
the model.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from policyspec.model.state import State, is_present

__all__ = [
    "GROUP_STRIDE",
    "HOOKS",
    "Request",
    "Requests",
    "can_access",
    "can_finish",
    "can_observe",
    "can_store_miss",
    "group_of",
    "offload_key",
    "ordered_keys",
]

GROUP_STRIDE = 1 << 24
"""Model key ``k`` belongs to KV-cache group ``k // GROUP_STRIDE``: the
harness makes its real key with that group index (``get_offload_group_idx``)."""

HOOKS = ("on_store_miss", "on_request_access", "on_request_finished")
"""The request hooks, as 0.33's manager calls them."""


def group_of(key: int) -> int:
    """The KV-cache group of model key ``key``."""
    return key // GROUP_STRIDE


@dataclass(frozen=True)
class Request:
    """What the caller contract knows of one request in one generation."""

    positions: Mapping[int, int] = field(default_factory=dict)
    """End-token position of each key the scheduler placed (not every key
    has one)."""
    seen: frozenset[int] = frozenset()
    """Keys already passed to ``on_request_access`` in this generation."""
    missed: frozenset[int] = frozenset()
    """Keys already passed to ``on_store_miss`` in this generation."""
    finished: bool = False
    generation: int = 0


@dataclass(frozen=True)
class Requests:
    """Every request the caller has opened, and the cache generation (one
    more after each ``clear``: state of an older generation is void)."""

    table: Mapping[int, Request] = field(default_factory=dict)
    generation: int = 0

    def get(self, r: int) -> Request:
        """Request ``r`` as this generation sees it (a fresh record when it
        is new or from an older generation, as 0.33's manager treats it)."""
        found = self.table.get(r)
        if found is None:
            return Request(generation=self.generation)
        if found.generation != self.generation:
            return Request(positions=found.positions, generation=self.generation)
        return found

    def put(self, r: int, request: Request) -> Requests:
        return Requests({**self.table, r: request}, self.generation)

    def after(self, call: tuple[Any, ...]) -> Requests:
        """The records after a call (only request calls and clear change them)."""
        op = call[0]
        if op == "clear":
            return Requests(self.table, self.generation + 1)
        if op == "set_positions":
            r, placed = call[1], call[2]
            request = self.get(r)
            positions = {**request.positions, **dict(placed)}
            return self.put(r, replace(request, positions=positions))
        if op == "on_store_miss":
            request = self.get(call[1])
            missed = request.missed | frozenset(call[2])
            return self.put(call[1], replace(request, missed=missed))
        if op == "on_request_access":
            request = self.get(call[1])
            seen = request.seen | frozenset(call[2])
            return self.put(call[1], replace(request, seen=seen))
        if op == "on_request_finished":
            request = self.get(call[1])
            return self.put(call[1], replace(request, finished=True))
        return self


# -- the caller contract of the hooks (0.33's CPUOffloadingManager) ------------


def can_store_miss(state: State, requests: Requests, r: int, keys: Sequence[int]) -> bool:
    """``prepare_store`` reports the keys it is about to store that its
    request has not reported yet: distinct absent keys, at least one, of an
    unfinished request (spec/request.md; spec/contract.md, R9)."""
    request = requests.get(r)
    return (
        bool(keys)
        and not request.finished
        and len(set(keys)) == len(keys)
        and not any(is_present(state, k) or k in request.missed for k in keys)
    )


def can_access(state: State, requests: Requests, r: int, keys: Sequence[int]) -> bool:
    """``prepare_store`` and ``prepare_load`` report the keys their request
    sees for the first time in this generation: distinct, at least one, of
    an unfinished request; in any state (stored, loaded, missed)."""
    request = requests.get(r)
    return (
        bool(keys)
        and not request.finished
        and len(set(keys)) == len(keys)
        and not any(k in request.seen for k in keys)
    )


def can_observe(requests: Requests, r: int) -> bool:
    """A hook a later release adds, called as ``hook(keys, req_context)``
    (an observation hook, ``("hook", name, r, keys)``), comes from an
    unfinished request, with any keys (none, absent, repeated): what its
    manager passes is the release's, so the contract asks no more."""
    return not requests.get(r).finished


def can_finish(requests: Requests, r: int) -> bool:
    """``on_request_finished`` comes at most once per request and cache
    generation (the manager's ``finished`` flag)."""
    return not requests.get(r).finished


def ordered_keys(groups: Iterable[Sequence[int]], positions: Mapping[int, int]) -> list[int]:
    """0.33's ``order_request_keys``: the keys of every group, in one
    head-to-tail order by position when every key has one, else as given."""
    keys = [k for group in groups for k in group]
    if all(k in positions for k in keys):
        keys.sort(key=positions.__getitem__)
    return keys


def offload_key(index: int) -> bytes:
    """The real key of model key ``index``, in vLLM's OffloadKey format:
    block-hash bytes, then the KV-cache group index as 4 big-endian bytes.
    The group is ``index // GROUP_STRIDE`` (model/request.py), so keys of
    several groups may share a block hash, as in vLLM; distinct indexes give
    distinct keys."""
    group, block = divmod(index, GROUP_STRIDE)
    digest = hashlib.blake2b(block.to_bytes(8, "big", signed=True), digest_size=16).digest()
    return digest + group.to_bytes(4, "big")
