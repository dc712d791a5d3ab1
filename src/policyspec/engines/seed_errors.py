"""The ``seed-errors`` checks: break the caller contract on purpose and
expect the seed LRU's KeyError (spec/seed-errors.md).

Deliberately outside the harness: the harness never breaks the contract.
Each case runs on a fresh policy, so a tolerant policy is reported without
disturbing any other check.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from policyspec.environment import active
from policyspec.model.actions import Action
from policyspec.run.context import Engine, EngineContext
from policyspec.run.result import EngineRun, Finding
from policyspec.vllm.standins.gaps import raise_if_gap

__all__ = ["run_seed_errors"]


def _expect_key_error(call: Callable[[], Any]) -> str | None:
    """None when ``call`` raises KeyError, else what it did instead."""
    try:
        call()
    except KeyError:
        return None
    except Exception as exc:
        raise_if_gap(exc)
        return f"raised {type(exc).__name__}: {exc}"
    return "returned normally"


def run_seed_errors(ctx: EngineContext) -> EngineRun:
    """The four cases, whatever the budget."""
    subject, capacity = ctx.subject, ctx.capacity
    started = time.monotonic()
    run = EngineRun(engine="seed-errors")
    key = subject.make_key

    def case(requirement: str, setup: tuple[Action, ...], what: str,
             call: Callable[[Any], Any]) -> None:
        with active(subject.environment()):
            policy = subject.build(capacity)
            for action in setup:  # only inserts in flight: no ref_cnt writes needed
                policy.insert(key(action[1]), subject.make_block(action[2], 0))
            outcome = _expect_key_error(lambda: call(policy))
        run.calls += len(setup) + 1
        run.examples += 1
        run.checked[requirement] += 1
        if outcome is not None:
            run.add(Finding(requirement, f"{what} {outcome}; the seed raises KeyError",
                            setup, run.engine, shrunk=True))

    if subject.has("mark"):
        case("SEED-ERR-MARK-NON-EVICTABLE", (), "mark_non_evictable(key 0) of an absent key",
             lambda p: p.mark_non_evictable(key(0)))
        case("SEED-ERR-MARK-NON-EVICTABLE", (("insert", 0, -1),),
             "mark_non_evictable(key 0) of an in-flight key",
             lambda p: p.mark_non_evictable(key(0)))
    case("SEED-ERR-REMOVE-ABSENT", (), "remove(key 0) of an absent key",
         lambda p: p.remove(key(0)))
    case("SEED-ERR-REMOVE-ABSENT", (("insert", 1, -1),), "remove(key 0) of an absent key",
         lambda p: p.remove(key(0)))
    run.steps = run.examples
    run.seconds = time.monotonic() - started
    return run


ENGINES = (Engine("seed-errors", run_seed_errors, 0.01, only_for="seed-errors"),)
