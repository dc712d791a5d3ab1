"""The clock steps the engines add to a trace once the policy has read a
clock (``policyspec.environment``): time moves the way real clocks go,
mostly in small steady steps, sometimes a jump forward, now and then a step
back of the wall clock (API-CLOCK-STEP-BACK). A policy that never reads a
clock gets none: its traces, and the engines' draws, stay what they were.

A clock step is the action ``("clock", ms)``; ``CLOCK_STEPS`` lists the
steps drawn, steady ones first so that a shrinker that moves towards the
first element (Hypothesis's ``sampled_from``) moves towards small steps.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TypeVar

from policyspec.environment import Environment
from policyspec.harness import Aborted, CallerContractError, ConformanceFailure, Lockstep
from policyspec.model.actions import Action
from policyspec.model.state import IDLE, IN_FLIGHT
from policyspec.profiles import get_profile
from policyspec.subject import Subject

__all__ = ["CLOCK_SHARE", "CLOCK_STEPS", "clock_action", "reads_clock", "with_clock_steps"]

STEADY = (1, 5, 20, 100)
"""Small steps, in ms: time passing between calls."""
FORWARD = (1_000, 60_000, 3_600_000, 86_400_000)
"""Jumps forward: a second, a minute, an hour, a day."""
BACK = (-1_000, -60_000, -3_600_000)
"""Steps back of the wall clock: a second, a minute, an hour."""
CLOCK_STEPS = (*STEADY, *FORWARD, *BACK)
CLOCK_SHARE = 0.1
"""The share of a clock-reading policy's draws that are clock steps."""
_WEIGHTS = (10,) * len(STEADY) + (4,) * len(FORWARD) + (1,) * len(BACK)
_TABLE = [ms for ms, weight in zip(CLOCK_STEPS, _WEIGHTS, strict=True) for _ in range(weight)]

T = TypeVar("T")


def clock_action(rng: random.Random) -> Action:
    """One clock step: steady ones most often, then jumps forward, rarely a
    step back."""
    return ("clock", _TABLE[int(rng.random() * len(_TABLE))])


def with_clock_steps(
    draw: Callable[[T], Action], environment: Environment, rng: random.Random,
) -> Callable[[T], Action]:
    """``draw`` with a clock step instead, one time in ten, once the policy
    of ``environment`` has read a clock (the same ``rng``: the same seed
    gives the same trace)."""

    def drawn(state: T) -> Action:
        if environment.read_clock and rng.random() < CLOCK_SHARE:
            return clock_action(rng)
        return draw(state)

    return drawn


PROBE: tuple[Action, ...] = (
    ("insert", 0, IN_FLIGHT), ("finish_store", 0), ("insert", 1, IDLE), ("insert", 2, IN_FLIGHT),
    ("touch", (0, 1, 3)), ("get", 1), ("start_read", 0), ("evict", 1, frozenset({2})),
    ("end_read", 0), ("remove", 2), ("evict", 5, frozenset()), ("clear",),
)
"""Every call once (and a failed evict): enough for most clock-reading
policies to read their clock."""


def reads_clock(subject: Subject, capacity: int) -> bool:
    """Whether the policy reads a clock on ``PROBE``: engines whose draws
    are fixed up front (a Hypothesis machine's rules) add clock steps only
    then, so that a policy that never reads one is checked exactly as
    before. The probe stops at its first MUST failure."""
    harness = Lockstep(subject, get_profile("core"), capacity, observe=False, threads=False)
    try:
        for action in PROBE:
            if action[0] not in ("clear", "touch") or subject.has(action[0]):
                harness.apply(action)
    except (ConformanceFailure, Aborted, CallerContractError):
        pass
    return harness.environment.read_clock
