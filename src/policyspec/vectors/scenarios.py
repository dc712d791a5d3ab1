"""The named cases: vLLM's own test scenarios and one sequence per fault of
the bug catalogue that shows at the policy level.

Each builder writes caller actions only; ``Script`` derives every expected
result from the model. The names are what a failing replay reports, so each
says what it guards (``V1-...`` ids follow the project's bug catalogue;
spec pages explain each requirement named in ``exposes``).
"""

from __future__ import annotations

from collections.abc import Callable

from policyspec.model.state import IDLE, IN_FLIGHT
from policyspec.profiles import get_profile
from policyspec.vectors.script import Script

__all__ = ["FAULT_CASES", "VLLM_CASES"]

_VLLM_TESTS = "vLLM tests/v1/kv_offload (seed era), via spec/lru.md"


def _script(name: str, profile: str, capacity: int, source: str, description: str,
            exposes: str | None = None) -> Script:
    return Script(name, get_profile(profile), capacity, source=source,
                  description=description, exposes=exposes)


def _ready(s: Script, *keys: int) -> Script:
    """Insert idle blocks (the API's other branch of insert)."""
    return s.act(*(("insert", k, IDLE) for k in keys))


def _stored(s: Script, *keys: int) -> Script:
    """Insert in flight, then complete: what the manager does."""
    s.act(*(("insert", k, IN_FLIGHT) for k in keys))
    return s.act(*(("finish_store", k) for k in keys))


# -- vLLM's scenarios (lru) -------------------------------------------------------


def vllm_policy_order() -> Script:
    s = _script("vllm-policy-order-3-1-2", "lru", 4, _VLLM_TESTS,
                "ready blocks 3, 1, 2, 0; touch([0]); evict(3) gives [3, 1, 2]",
                "LRU-EVICT-ORDER")
    _ready(s, 3, 1, 2, 0)
    return s.act(("touch", (0,)), ("evict", 3, frozenset()), ("get", 0))


def vllm_manager_scenario() -> Script:
    s = _script("vllm-manager-full-scenario", "lru", 4, _VLLM_TESTS,
                "the manager's store/load/touch scenario: evictions [1], then [4, 5, 2] "
                "(loads refresh recency), then [8]; a failed store removes only the key in "
                "flight", "LRU-MARK-RECENCY")
    s.prepare_store(1, 2)
    s.lookup(1, 2)
    s.complete_store(1, 2)
    s.lookup(1, 2)
    s.prepare_store(2, 3, 4, 5)  # evicts [1]; 2 is offered, so protected
    s.prepare_store(1, 6)  # needs 2 victims, 1 idle: the manager gives up
    s.complete_store(2, 3, 4, 5)
    s.prepare_load(2, 3)
    s.prepare_store(6, 7, 8)  # needs 3 victims, 2 idle: gives up
    s.complete_load(2, 3)
    s.prepare_store(6, 7, 8)  # evicts [4, 5, 2]
    s.complete_store(6, 7, 8)
    s.act(("touch", (3, 6, 7)))
    s.prepare_store(9)  # evicts [8]
    s.complete_store(7, 9, success=False)
    return s.lookup(7, 9)


def vllm_already_stored() -> Script:
    s = _script("vllm-already-stored-block-not-evicted", "lru", 4, _VLLM_TESTS,
                "store [1, 2]; touch([1]); prepare_store([2, 3, 4, 5]) evicts 1, not the "
                "least recent 2, because 2 is offered (protected); 2 stays a hit",
                "EVICT-UNPROTECTED")
    s.prepare_store(1, 2)
    s.complete_store(1, 2)
    s.act(("touch", (1,)))
    s.prepare_store(2, 3, 4, 5)
    return s.lookup(2)


def vllm_concurrent_loads() -> Script:
    s = _script("vllm-concurrent-loads", "lru", 4, _VLLM_TESTS,
                "two loads of one block: pinned until the last one ends, then the most "
                "recent idle block", "MARK-NON-EVICTABLE-PINS")
    s.prepare_store(1, 2, 3)
    s.complete_store(1, 2, 3)
    s.prepare_load(1)
    s.prepare_load(1)
    s.complete_load(1)
    s.act(("evict", 3, frozenset()))  # only 2 and 3 are idle: None
    s.complete_load(1)
    return s.act(("evict", 3, frozenset()))


VLLM_CASES: tuple[Callable[[], Script], ...] = (
    vllm_policy_order, vllm_manager_scenario, vllm_already_stored, vllm_concurrent_loads,
)

# -- the bug catalogue (spec/bugs.md ids) -------------------------------------------------

_BUGS = "policyspec bug catalogue"


def v1() -> Script:
    s = _script("V1-protected-key-not-evicted", "core", 4, f"{_BUGS} V1 (vllm PR #35846)",
                "the only idle key outside protected must be the victim", "EVICT-UNPROTECTED")
    _ready(s, 0, 1)
    return s.act(("evict", 1, frozenset({0})), ("get", 0))


def v2() -> Script:
    s = _script("V2-failed-evict-changes-nothing", "core", 4, f"{_BUGS} V2",
                "evict(3) with two idle keys returns None and loses nothing; both can then "
                "be evicted", "EVICT-ATOMIC")
    _ready(s, 0, 1)
    s.act(("insert", 2, IN_FLIGHT), ("evict", 3, frozenset()))
    return s.act(("get", 0), ("get", 1), ("get", 2), ("evict", 2, frozenset()))


def v3() -> Script:
    s = _script("V3-touch-keeps-block-in-flight", "core", 4, f"{_BUGS} V3 (vllm PR #34576)",
                "touching a block in flight neither raises nor drops it",
                "TOUCH-KEEPS-MEMBERSHIP")
    s.act(("insert", 0, IN_FLIGHT), ("touch", (0,)), ("get", 0), ("finish_store", 0))
    return s.act(("evict", 1, frozenset()))


def v4() -> Script:
    s = _script("V4-no-needless-refusal", "lru", 4, f"{_BUGS} V4 (vllm PR #55461), G6",
                "the least recent idle key is being read: evict(1) takes the next one "
                "instead of refusing", "LRU-LIVENESS")
    _ready(s, 0, 1)
    return s.act(("start_read", 0), ("evict", 1, frozenset()))


def v4_core() -> Script:
    s = _script("V4-core-no-needless-refusal", "core", 4, f"{_BUGS} V4, G6",
                "two idle keys, one asked for: None is only a SHOULD failure under core",
                "EVICT-LIVENESS")
    _ready(s, 0, 1, 2)
    return s.act(("start_read", 0), ("evict", 2, frozenset()))


def v8() -> Script:
    s = _script("V8-store-completion-is-most-recent", "lru", 4,
                f"{_BUGS} V8 (vllm PR #46216)",
                "a block whose store completes becomes the most recent idle key",
                "LRU-MARK-RECENCY")
    s.act(("insert", 1, IN_FLIGHT))
    _ready(s, 0)
    return s.act(("finish_store", 1), ("evict", 1, frozenset()), ("evict", 1, frozenset()))


def v9() -> Script:
    s = _script("V9-in-flight-never-evicted", "core", 4, f"{_BUGS} V9",
                "a block still being written is not a victim, whatever its place",
                "EVICT-IDLE-ONLY")
    s.act(("insert", 0, IN_FLIGHT))
    _ready(s, 1)
    return s.act(("evict", 1, frozenset()), ("evict", 1, frozenset()), ("get", 0))


def v10() -> Script:
    s = _script("V10-remove-drops-only-its-key", "core", 4, f"{_BUGS} V10",
                "removing a failed store leaves every other block in place", "REMOVE-DROPS")
    _ready(s, 0)
    s.act(("insert", 1, IN_FLIGHT), ("insert", 2, IN_FLIGHT), ("remove", 1))
    return s.act(("get", 0), ("get", 1), ("get", 2))


def v11() -> Script:
    s = _script("V11-load-end-makes-evictable", "lru", 4, f"{_BUGS} V11 (vllm PR #45757)",
                "the end of the last load makes a block evictable again; an earlier end "
                "does not", "MARK-EVICTABLE-ELIGIBLE")
    _stored(s, 0)
    s.act(("start_read", 0), ("start_read", 0), ("end_read", 0), ("evict", 1, frozenset()))
    return s.act(("end_read", 0), ("evict", 1, frozenset()))


def v12() -> Script:
    s = _script("V12-clear-drops-everything", "core", 4, f"{_BUGS} V12 (vllm PR #41956)",
                "clear drops blocks in flight and being read; the policy then works afresh",
                "CLEAR-EMPTIES")
    s.act(("insert", 0, IN_FLIGHT))
    _ready(s, 1)
    s.act(("start_read", 1), ("clear",), ("get", 0), ("get", 1))
    _ready(s, 0)
    return s.act(("evict", 1, frozenset()))


def v13() -> Script:
    s = _script("V13-protected-names-resident-keys", "core", 4,
                f"{_BUGS} V13 (vllm PR #50014)",
                "protected holds a resident idle key and an absent one; both must be honoured",
                "EVICT-UNPROTECTED")
    _ready(s, 0, 1)
    return s.act(("evict", 1, frozenset({0, 5})), ("get", 0))


def v14() -> Script:
    s = _script("V14-touch-absent-creates-nothing", "core", 4, f"{_BUGS} V14 (vllm PR #44533)",
                "touching keys never inserted adds nothing and keeps evictions exact",
                "TOUCH-KEEPS-MEMBERSHIP")
    _ready(s, 0)
    s.act(("touch", (7, 8)), ("get", 7), ("evict", 2, frozenset()))
    return s.act(("evict", 1, frozenset()), ("get", 0), ("get", 7))


def g1() -> Script:
    s = _script("G1-new-block-is-most-recent", "lru", 4, f"{_BUGS} G1",
                "an idle block inserted last is evicted last", "LRU-INSERT-RECENCY")
    _ready(s, 0, 1)
    return s.act(("evict", 1, frozenset()))


def g11() -> Script:
    s = _script("G11-order-kept-across-evictions", "lru", 4, f"{_BUGS} G11",
                "evictions take keys least recent first and leave the rest in order",
                "LRU-ORDER-KEPT")
    _ready(s, 0, 1, 2, 3)
    return s.act(("evict", 1, frozenset()), ("evict", 1, frozenset()),
                 ("evict", 2, frozenset()))


def touch_prefix() -> Script:
    s = _script("touch-prefix-head-most-recent", "lru", 4, "vllm#39021, spec/lru.md",
                "touch([0, 1]) leaves 0 the most recent, so the order becomes 2, 1, 0",
                "LRU-TOUCH-ORDER")
    _ready(s, 0, 1, 2)
    return s.act(("touch", (0, 1)), ("evict", 3, frozenset()))


def exact_n() -> Script:
    s = _script("C3-exactly-n-distinct-victims", "core", 4, f"{_BUGS} C3, C6, S1",
                "evict(2) with three idle keys returns exactly two distinct ones",
                "EVICT-EXACT-N")
    _ready(s, 0, 1, 2)
    return s.act(("evict", 2, frozenset()))


def evict_zero() -> Script:
    s = _script("I9-evict-zero-is-empty", "core", 4, "spec/evict.md",
                "evict(0) returns [] and changes nothing", "EVICT-ZERO")
    _ready(s, 0)
    return s.act(("evict", 0, frozenset()), ("get", 0), ("evict", 1, frozenset()))


def pinned() -> Script:
    s = _script("pinned-block-not-evicted", "core", 4, f"{_BUGS} L1, S4",
                "a block being read is not a victim", "MARK-NON-EVICTABLE-PINS")
    _stored(s, 0)
    return s.act(("start_read", 0), ("evict", 1, frozenset()), ("get", 0))


FAULT_CASES: tuple[Callable[[], Script], ...] = (
    v1, v2, v3, v4, v4_core, v8, v9, v10, v11, v12, v13, v14, g1, g11, touch_prefix, exact_n,
    evict_zero, pinned,
)
