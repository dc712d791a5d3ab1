"""Replaying a policy-level trace as vLLM's manager would see it.

The manager engine's own checks (MANAGER-*) live in its bookkeeping, which
a plain lockstep replay cannot see, so their findings stood as Hypothesis
left them, hundreds of steps long. The bookkeeping follows from the calls
alone, so this module replays any trace the manager could have made with
it and audits after every call: the shared minimiser then shrinks those
findings too. A trace the manager could not make is not replayed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from policyspec.engines.manager_machine import ManagerMachine, manager_machine
from policyspec.harness import Aborted, CallerContractError, ConformanceFailure
from policyspec.model.actions import Action
from policyspec.model.state import IDLE, IN_FLIGHT
from policyspec.profiles import Profile
from policyspec.subject import Subject

__all__ = ["MANAGER_IDS", "manager_fails", "manager_failure"]

MANAGER_IDS = frozenset({"MANAGER-BLOCK-IDS", "MANAGER-IDLE-COUNT", "MANAGER-NO-LOST-DATA"})
"""The requirements only the manager's bookkeeping checks."""


class _NotByManager(Exception):
    """The trace has a call vLLM's manager would not make."""


def manager_failure(
    subject: Subject,
    profile: Profile,
    capacity: int,
    trace: Sequence[Action],
    *,
    fatal: Callable[[str], bool] | None = None,
) -> ConformanceFailure | None:
    """The failure replaying ``trace`` with the manager's bookkeeping raises
    (soft ones count too), or None; None also for a trace the manager could
    not make or the caller contract forbids."""
    machine = manager_machine(subject, profile, capacity=capacity, fatal=fatal)()
    try:
        for action in trace:
            _step(machine, action)
            machine._audit()
    except ConformanceFailure as failure:
        return failure
    except Aborted as aborted:
        return aborted.failure
    except (CallerContractError, _NotByManager):
        return None
    return machine.h.soft[0] if machine.h.soft else None


def manager_fails(
    subject: Subject, profile: Profile, capacity: int, family: frozenset[str]
) -> Callable[[Sequence[Action]], bool]:
    """A predicate for the minimiser: the trace, replayed with the manager's
    bookkeeping, still breaks one of ``family``."""

    def fails(trace: Sequence[Action]) -> bool:
        failure = manager_failure(subject, profile, capacity, trace, fatal=family.__contains__)
        return failure is not None and failure.requirement in family

    return fails


def _step(machine: ManagerMachine, action: Action) -> None:
    """One call as the manager makes it, with its bookkeeping (the
    operations of ``ManagerMachine``, one policy call at a time)."""
    h = machine.h
    op = action[0]
    refs = h.state.refs
    if op == "insert":
        k = action[1]
        if action[2] != IN_FLIGHT or not machine._free_ids():
            raise _NotByManager
        machine._apply(action)
        if k in h.blocks:
            machine.held[k] = h.blocks[k]
        else:  # the insert raised: give the id back
            block_id = next(i for i, o in machine.owner.items() if o == k)
            del machine.owner[block_id]
            machine.free.append(block_id)
    elif op == "evict":
        n = action[1]
        if not 1 <= n <= machine.idle_count:
            raise _NotByManager  # the fast-fail guard skips the call
        machine._apply(action)
        if h.last_evict is not None:
            machine._free_victims(h.last_evict, n)
    elif op == "finish_store":
        if refs.get(action[1]) != IN_FLIGHT or action[1] not in machine.held:
            raise _NotByManager
        machine._apply(action)
        machine._change_idle(+1, f"mark_evictable({action[1]})")
    elif op == "remove":
        if refs.get(action[1]) != IN_FLIGHT or action[1] not in machine.held:
            raise _NotByManager  # only a failed store removes
        machine._apply(action)
        machine._release(action[1])
    elif op == "start_read":
        if action[1] not in machine.held:
            raise _NotByManager
        if refs.get(action[1]) == IDLE:
            machine._change_idle(-1, f"mark_non_evictable({action[1]})")
        machine._apply(action)
    elif op == "end_read":
        if action[1] not in machine.held:
            raise _NotByManager
        machine._apply(action)
        if h.state.refs.get(action[1]) == IDLE:
            machine._change_idle(+1, f"mark_evictable({action[1]})")
    elif op == "clear":
        machine._apply(action)
        machine.idle_count = 0
        machine.fresh = 0
        machine.free.clear()
        machine.owner.clear()
        machine.held.clear()
    elif op in ("get", "touch"):
        machine._apply(action)
    else:
        raise _NotByManager  # the request hooks: not the seed-era manager's
