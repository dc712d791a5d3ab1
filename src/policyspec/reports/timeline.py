"""The timeline of a failure: the state of every key (spec/state.md) at every
step of its trace, computed by stepping the core model with the victims
each evict returned, so a reader sees what the policy was holding. The last
column shows the keys as the failing step found them: what the policy did
there broke the spec, so there is no "after" to show.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from policyspec.model.actions import Action
from policyspec.model.evict import eligible
from policyspec.model.state import IDLE, IN_FLIGHT, State
from policyspec.model.step import PREDICT, ProfileModel
from policyspec.reports.trace_record import decode_action
from policyspec.witness.render import describe

__all__ = [
    "ABSENT",
    "IDLE_STATE",
    "IN_FLIGHT_STATE",
    "READ",
    "Cell",
    "Step",
    "Timeline",
    "key_state",
    "timeline",
]

ABSENT, IN_FLIGHT_STATE, IDLE_STATE, READ = "absent", "in flight", "idle", "being read"


def key_state(state: State, key: int) -> str:
    """The spec's name for the state of ``key``."""
    ref = state.refs.get(key)
    if ref is None:
        return ABSENT
    if ref == IN_FLIGHT:
        return IN_FLIGHT_STATE
    return IDLE_STATE if ref == IDLE else READ


@dataclass(frozen=True)
class Cell:
    """One key at one step."""

    state: str
    ref_cnt: int | None
    victim: bool = False
    """Returned by this step's evict."""
    protected: bool = False
    """In this step's protected set."""
    named: bool = False
    """Named by this step (the key it inserts, touches, reads, ...)."""


@dataclass(frozen=True)
class Step:
    number: int
    text: str
    """The step in words (as in the text report)."""
    cells: dict[int, Cell]
    failing: bool = False
    victims: list[int] | None = None
    """What this step's evict returned (None: refused, or not an evict)."""
    note: str = ""
    """Why the picture may be less than exact (victims not recorded, ...)."""


@dataclass(frozen=True)
class Timeline:
    keys: list[int]
    steps: list[Step] = field(default_factory=list)


def _named(action: Action) -> frozenset[int]:
    """The keys a step names."""
    op = action[0]
    if op == "touch":
        return frozenset(action[1])
    if op == "evict":
        return frozenset(action[2])
    if op in ("clear", "clock"):
        return frozenset()
    if op in ("on_store_miss", "on_request_access"):
        return frozenset(action[2])
    if op == "hook":
        return frozenset(action[3])
    if op == "set_positions":
        return frozenset(k for k, _ in action[2])
    if op == "on_request_finished":
        return frozenset(k for group in action[2] for k in group)
    return frozenset((action[1],))


def _victims_of(state: State, action: Action, record: dict[str, Any]) -> tuple[object, str]:
    """What to tell the model a successful evict step returned: the
    recorded victims, else the model's own answer (the only possible
    victims, or the seed LRU's where the spec leaves a choice, said in the
    note)."""
    if "victims" in record:
        victims = record["victims"]
        return (None if victims is None else [int(k) for k in victims]), ""
    n, protected = action[1], action[2]
    if 0 < n < len(eligible(state, protected)):
        return PREDICT, "victims not recorded: the seed LRU's choice shown"
    return PREDICT, ""


def timeline(actions: Sequence[dict[str, Any]]) -> Timeline:
    """The timeline of a failure whose trace is ``actions`` (the report's
    records). Raises ValueError when the records are not a legal trace."""
    decoded = [decode_action(r) for r in actions]
    keys = sorted({k for a in decoded for k in _named(a)})
    model = ProfileModel.fresh(None, None)  # the core model: states are core's
    steps: list[Step] = []
    last = len(decoded) - 1
    for index, (action, record) in enumerate(zip(decoded, actions, strict=True)):
        failing = index == last
        state = model.state
        if not model.allows(action):
            raise ValueError(f"step {index + 1} ({describe(action)}) breaks the caller contract "
                             "of the model state the earlier steps reach")
        note = ""
        victims: list[int] | None = None
        if action[0] == "evict" and failing:
            recorded = record.get("victims")
            victims = None if recorded is None else [int(k) for k in recorded]
        elif not failing:
            observed: object = PREDICT
            if action[0] == "evict":
                observed, note = _victims_of(state, action, record)
            for call in model.calls(action):
                moved = model.step(call, observed) if call[0] == "evict" else model.step(call)
                if call[0] == "evict":
                    expected = moved.expected if observed is PREDICT else observed
                    victims = expected if isinstance(expected, list) else None
                model = moved.model
        shown = model.state
        named = _named(action)
        protected = action[2] if action[0] == "evict" else frozenset()
        gone = set(victims or ())
        cells = {
            key: Cell(key_state(shown, key), shown.refs.get(key), victim=key in gone,
                      protected=key in protected, named=key in named and action[0] != "evict")
            for key in keys
        }
        steps.append(Step(index + 1, describe(action), cells, failing, victims, note))
    return Timeline(keys, steps)
