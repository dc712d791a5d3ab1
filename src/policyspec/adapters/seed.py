"""Make a policy of any revision speak the seed (R3) API the engines drive.

One set of engines then checks every revision (spec/contract.md): ``adapt``
returns the policy itself when its calls already have the seed's shapes,
else a ``SeedAdapter`` that passes the arguments a later revision needs
(request contexts, sessions, nothing deprioritized) as vLLM's manager would,
and carries out each request hook the class does not define as its
revision's base class does. The wrapper costs one extra call at most.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Iterable
from typing import Any

from policyspec.protocols import observation_hooks, own_member
from policyspec.releases import RELEASES
from policyspec.subject import SeedPolicy

__all__ = ["HOOK_REVISIONS", "SeedAdapter", "adapt", "unwrap"]

_RELEASED = frozenset(r.revision for r in RELEASES)
"""The revisions of the release folders: insert takes the request."""
_TOUCH_CONTEXT = frozenset({"R4", "R5", "R6", "R6-draft", "R7", "R7b", "R8"}) | {
    r.revision for r in RELEASES if r.manager_touches}
_SESSIONS = frozenset({"R6", "R6-draft"})
HOOK_REVISIONS = frozenset({"R8"}) | _RELEASED
"""Revisions whose manager calls the request hooks (capability ``hooks``)."""


def _no_op(*_args: Any) -> None:
    return None


class SeedAdapter:
    """A policy of a later revision seen through the seed API (spec/contract.md)."""

    __slots__ = (
        "_depth",
        "_observed",
        "_open",
        "_pending",
        "clear",
        "evict",
        "evict_until",
        "get",
        "insert",
        "mark_evictable",
        "mark_non_evictable",
        "on_request_access",
        "on_request_finished",
        "on_store_miss",
        "policy",
        "remove",
        "req_context",
        "revision",
        "touch",
    )

    policy: Any
    revision: str
    req_context: Any
    get: Callable[[Any], Any]
    insert: Callable[[Any, Any], None]
    remove: Callable[[Any], None]
    touch: Callable[[Iterable[Any]], None]
    evict: Callable[[int, Collection[Any]], Any]
    clear: Callable[[], None]
    mark_evictable: Callable[[Any], None]
    mark_non_evictable: Callable[[Any], None]
    evict_until: Callable[[Callable[[list[Any]], bool], Collection[Any]], Any]
    on_store_miss: Callable[[Iterable[Any], Any], None]
    on_request_access: Callable[[Iterable[Any], Any], None]
    on_request_finished: Callable[[Any, Any, Any, Any], None]

    def __init__(self, policy: Any, revision: str, req_context: Any) -> None:
        self.policy = policy
        self.revision = revision
        self.req_context = req_context
        self._depth = 0
        self._open = False
        self._pending = False
        self._observed: dict[str, Callable[[Iterable[Any], Any], None]] = {}
        """The observation hooks of a later revision
        (``protocols.observation_hooks``), by name: the class's own, or
        its base class's default, taken to do nothing."""

    def __getattr__(self, name: str) -> Any:
        # Reached only for a name no slot holds: an observation hook.
        try:
            return object.__getattribute__(self, "_observed")[name]
        except (AttributeError, KeyError):
            raise AttributeError(f"{type(self).__name__} has no {name}") from None

    def use_request(self, req_id: str) -> None:
        """Make later calls come from request ``req_id`` (a fresh context)."""
        self.req_context = type(self.req_context)(req_id)

    def begin_store(self, keys: Iterable[Any]) -> None:
        """R6: a store batch offering ``keys`` starts (before its eviction)."""
        self.end_store()
        depth = 0
        get = self.policy.get
        for key in keys:
            if get(key) is None:
                break
            depth += 1
        self._depth = depth
        self._pending = True

    def end_store(self) -> None:
        """R6: the store batch's inserts are done; close its session."""
        self._pending = False
        self._depth = 0
        if self._open:
            self._open = False
            close = getattr(self.policy, "close_session", None)
            if close is not None:
                close()

    def __repr__(self) -> str:
        return f"SeedAdapter({self.policy!r}, revision={self.revision!r})"

    def __deepcopy__(self, memo: dict[int, Any]) -> SeedAdapter:
        """The same view over a copy of the policy. The closures above hold
        the original policy's methods, and ``deepcopy`` shares functions, so
        copying the adapter field by field would leave the copy's ``insert``
        and ``touch`` calling the original (a branching engine's fork)."""
        policy = copy.deepcopy(self.policy, memo)
        view = adapt(
            policy, self.revision, copy.deepcopy(self.req_context, memo),
            has_evict_until=hasattr(self, "evict_until"),
        )
        assert isinstance(view, SeedAdapter)
        memo[id(self)] = view
        view._depth, view._open, view._pending = self._depth, self._open, self._pending
        return view


def unwrap(policy: object) -> object:
    """The policy object behind a seed-API view."""
    return policy.policy if isinstance(policy, SeedAdapter) else policy


def adapt(
    policy: Any,
    revision: str,
    req_context: Any,
    *,
    has_evict_until: bool = False,
) -> SeedPolicy:
    """``policy`` seen through the seed API (spec/contract.md)."""
    touch_ctx = revision in _TOUCH_CONTEXT
    if not touch_ctx and revision not in _SESSIONS and revision not in HOOK_REVISIONS:
        seed: SeedPolicy = policy
        return seed
    w = SeedAdapter(policy, revision, req_context)
    w.get = policy.get
    w.insert = policy.insert
    w.remove = policy.remove
    w.evict = policy.evict
    for name in ("clear", "mark_evictable", "mark_non_evictable"):
        setattr(w, name, getattr(policy, name, _no_op))
    if has_evict_until:
        w.evict_until = policy.evict_until
    if touch_ctx:
        policy_touch = policy.touch

        def touch(keys: Iterable[Any]) -> None:
            policy_touch(keys, w.req_context)

        w.touch = touch
    if revision in _RELEASED:
        policy_insert = policy.insert

        def insert_in_request(key: Any, block: Any, req_context: Any = None) -> None:
            policy_insert(key, block, w.req_context if req_context is None else req_context)

        w.insert = insert_in_request
    elif revision in HOOK_REVISIONS:
        policy_plain_insert = policy.insert

        def insert_without_request(key: Any, block: Any, req_context: Any = None) -> None:
            policy_plain_insert(key, block)  # R8's insert takes no context

        w.insert = insert_without_request
    if revision in HOOK_REVISIONS:
        _hooks(w, policy)
    if revision == "R7b":
        policy_evict = policy.evict

        def evict_plain(n: int, protected: Collection[Any]) -> Any:
            return policy_evict(n, protected, set())

        w.evict = evict_plain
    if revision in _SESSIONS:
        _sessions(w, policy, draft=revision == "R6-draft")
    return w


def _hooks(w: SeedAdapter, policy: Any) -> None:
    """The policy's own request hooks, or its revision's defaults for those
    it does not define itself: R8 and R9's base class touches, R10's (and
    every later one without touch) does nothing, as does an observation
    hook a later release adds (``protocols.observation_hooks``). (The
    defaults of a stand-in or real base class are not taken: a class that
    fits two revisions inherits one base, and is driven with the defaults
    of the revision it is driven as.)"""
    cls = type(policy)

    def access(keys: Iterable[Any], req_context: Any) -> None:
        return None

    if w.revision not in _TOUCH_CONTEXT:
        store_miss: Callable[[Iterable[Any], Any], None] = access

        def finished(groups: Any, insertion_only: Any, reused: Any, req_context: Any) -> None:
            return None
    else:
        touch = policy.touch

        def store_miss(keys: Iterable[Any], req_context: Any) -> None:
            touch(keys, req_context)

        def finished(groups: Any, insertion_only: Any, reused: Any, req_context: Any) -> None:
            for keys in groups:
                touch(keys, req_context)

    def own(name: str, default: Callable[..., None]) -> Any:
        # The member the policy itself defines, bound; not ``getattr``, which
        # would find a stand-in in-tree policy's base-class default first.
        member = own_member(cls, name)
        if member is None:
            return default
        return member.__get__(policy, cls) if hasattr(member, "__get__") else member

    w.on_store_miss = own("on_store_miss", store_miss)
    w.on_request_access = own("on_request_access", access)
    w.on_request_finished = own("on_request_finished", finished)
    w._observed = {name: own(name, access) for name in observation_hooks(w.revision)}


def _sessions(w: SeedAdapter, policy: Any, *, draft: bool) -> None:
    policy_evict = policy.evict
    policy_insert = policy.insert
    open_session = getattr(policy, "open_session", None)
    close_session = getattr(policy, "close_session", None)

    def who() -> Any:
        return w.req_context.req_id if draft else w.req_context

    def evict(n: int, protected: Collection[Any]) -> Any:
        return policy_evict(n, protected, who(), w._depth)

    def insert(key: Any, block: Any) -> None:
        if w._open or open_session is None:
            policy_insert(key, block)
        elif w._pending:
            open_session(who(), w._depth)
            w._open = True
            policy_insert(key, block)
        else:
            open_session(who(), 0)
            try:
                policy_insert(key, block)
            finally:
                if close_session is not None:
                    close_session()

    w.evict = evict
    w.insert = insert
