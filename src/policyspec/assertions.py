"""What a failure's snippet needs besides the policy (spec/check.md, "The
snippet"): its class imported as the check imported it, vLLM's own types
(stand-ins without vLLM), and the assertion it ends with: the check's own
judgement of the same calls, on a fresh policy of the class the snippet
built, so that saved beside a fixed class it passes and against the faulty
one it fails with the requirement's id and message."""

from __future__ import annotations

import atexit
from collections.abc import Callable, Hashable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from policyspec.findings.manager_replay import MANAGER_IDS, manager_failure
from policyspec.model.actions import Action
from policyspec.profiles import get_profile
from policyspec.subject import Subject
from policyspec.witness.reproduce import failure_of, family

__all__ = [
    "assert_engine_finds_nothing",
    "assert_requirement_holds",
    "policy_class",
    "release_stand_ins",
    "vllm_types",
]


def policy_class(target: str, placeholders: Sequence[str] = ()) -> type:
    """The class ``target`` names (``path/file.py:Class`` or
    ``pkg.module:Class``), imported as ``policyspec check`` imports it. When
    vLLM is not installed its stand-ins stay installed for the rest of the
    process, since a policy may import ``vllm`` inside a method."""
    from policyspec.adapters.target import import_target, parse_target, resolve_class
    from policyspec.vllm import standins

    guard = standins.installed(placeholders)
    record = guard.__enter__()  # left installed on purpose (docstring)
    if not _LEFT:  # undone before the interpreter tears its modules down
        atexit.register(release_stand_ins)
    _LEFT.append(guard)
    parsed = parse_target(target)
    cls = resolve_class(import_target(parsed), parsed)
    if record is not None:
        record.arm()
    return cls


_LEFT: list[AbstractContextManager[object]] = []
"""The stand-in installations ``policy_class`` left in place."""


def release_stand_ins() -> None:
    """Remove the stand-ins ``policy_class`` left installed: for a process
    that runs snippets in itself (a test suite) and goes on to other work."""
    while _LEFT:
        _LEFT.pop().__exit__(None, None, None)


def vllm_types(
    cls: type, api: str,
) -> tuple[Callable[[int, int], Any], Callable[[str], Any], Callable[[int], Hashable]]:
    """``(block, ReqContext, key)`` for a policy of revision ``api``:
    ``block(ref_cnt, id)`` makes the ``BlockStatus`` / ``ChunkStatus``
    record the policy's module uses (built with its id, then ref_cnt
    written, as the manager does), ``ReqContext`` is vLLM's request context
    class and ``key(i)`` vLLM's ``OffloadKey`` bytes of model key i. They
    come from the installed vLLM, else from policyspec's stand-ins."""
    from policyspec.adapters.blocks import block_factory, block_type, req_context_class
    from policyspec.adapters.revisions import block_kind
    from policyspec.subject import offload_key

    make_block = block_factory(block_type(cls, api, block_kind(cls, api)))
    return make_block, req_context_class(), offload_key


def _subject(policy: type | Subject, api: str | None,
             placeholders: Sequence[str] = ()) -> Subject:
    if isinstance(policy, Subject):
        return policy
    from policyspec.adapters import subject_for_class

    subject = subject_for_class(policy, api=api)
    if placeholders:
        from dataclasses import replace

        subject = replace(subject, placeholders=tuple(placeholders))
    return subject


def assert_requirement_holds(
    policy: type | Subject, profile: str, capacity: int, trace: Sequence[Action],
    requirement: str, *, seen: str | None = None, api: str | None = None,
    message: str = "", call_timeout: float | None = None,
) -> None:
    """AssertionError ``"ID: message"`` when replaying ``trace`` on a fresh
    policy (of the class ``policy``, driven as revision ``api``; or of a
    Subject) breaks ``requirement`` under ``profile``; nothing when the
    policy meets it there. ``seen``: the id the replay itself shows the
    fault as, when the check blamed another for it (the operation behind a
    wrong order, the hook or thread behind a core failure). ``message``:
    what the check reported, quoted beside what the replay saw now.
    ``call_timeout``: the seconds a call may take (default: the check's
    default), unless a caller's limit is active."""
    from contextlib import nullcontext

    from policyspec.harness.watchdog import Watchdog, current
    from policyspec.options import DEFAULT_CALL_TIMEOUT

    chosen = get_profile(profile)
    ids = family(chosen, requirement) | (family(chosen, seen) if seen else frozenset())
    replay = manager_failure if ids & MANAGER_IDS else failure_of
    # A call that never returns is API-RETURNS, as in the check: each call
    # gets the default call time limit, unless a caller's limit is active.
    limit: AbstractContextManager[object] = (
        Watchdog(call_timeout or DEFAULT_CALL_TIMEOUT) if current.limit == 0
        else nullcontext())
    with limit:
        failure = replay(_subject(policy, api), chosen, capacity, tuple(trace),
                         fatal=ids.__contains__)
    if failure is not None and failure.requirement in ids:
        shown = message or failure.message
        also = ""
        if failure.requirement != requirement:
            said = "" if failure.message == shown else f": {failure.message}"
            also = f" (the replay shows it as {failure.requirement}{said})"
        raise AssertionError(f"{requirement}: {shown}{also}")


def assert_engine_finds_nothing(
    policy: type, profile: str, engine: str, requirement: str, *, seed: int,
    budget: float | str, capacity: int | None = None, api: str | None = None,
    message: str = "",
) -> None:
    """AssertionError ``"ID: message"`` when the ``engine`` run of the check
    (same seed and budget) reports ``requirement`` for the class
    ``policy``: the snippet of a finding that no single trace shows (a
    measurement of work at two sizes, a metamorphic comparison of two runs,
    a call that hangs)."""
    from policyspec.options import CheckOptions
    from policyspec.session import run_check

    options = CheckOptions(jobs=1, fail_fast=True)
    report = run_check(_subject(policy, api), get_profile(profile), options=options,
                       engines=[engine], seed=seed, budget=budget, capacity=capacity)
    for failure in report.failures:
        if failure.requirement == requirement:
            raise AssertionError(f"{requirement}: {message or failure.message}")
