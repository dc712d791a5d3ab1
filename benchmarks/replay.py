"""Recording the calls a policy receives, and replaying them without checks.

A replay is the physical limit of checking: the same calls on a fresh
policy, bound in advance, in a tight loop, nothing compared. Logs hold one
entry per policy call and, for workloads, the manager's writes of
``ref_cnt`` (``set_ref``), so that a policy that reads ``ref_cnt`` later
sees what it saw when the log was made. Blocks are recorded by index and
made fresh for every replay: a replay never shares an object with another.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from time import process_time
from typing import Any

from policyspec.subject import Block, Subject

__all__ = ["BUILD", "BlockRef", "Log", "Recorder", "prepare", "recording", "replay"]

BUILD = "__build__"
"""Log entry: a new policy, built with ``(capacity,)``."""


@dataclass(frozen=True)
class BlockRef:
    """A block in a log: the index of its insert, and its fields then."""

    index: int
    ref_cnt: int
    block_id: int


Log = list[tuple[str, tuple[Any, ...]]]


class Recorder:
    """Forwards every call to ``policy`` and appends it to ``log``."""

    def __init__(self, policy: Any, log: Log) -> None:
        self._policy = policy
        self._log = log
        self._blocks = 0

    def get(self, key: Hashable) -> Any:
        self._log.append(("get", (key,)))
        return self._policy.get(key)

    def insert(self, key: Hashable, block: Any) -> None:
        self._log.append(("insert", (key, BlockRef(self._blocks, block.ref_cnt, block.block_id))))
        self._blocks += 1
        self._policy.insert(key, block)

    def remove(self, key: Hashable) -> None:
        self._log.append(("remove", (key,)))
        self._policy.remove(key)

    def touch(self, keys: Any) -> None:
        items = list(keys)
        self._log.append(("touch", (items,)))
        # A one-shot iterator (the engines pass generators too) is spent by
        # the copy above: the policy gets a fresh one of the same items.
        self._policy.touch(iter(items) if iter(keys) is keys else keys)

    def evict(self, n: int, protected: Any) -> Any:
        self._log.append(("evict", (n, set(protected))))
        return self._policy.evict(n, protected)

    def clear(self) -> None:
        self._log.append(("clear", ()))
        self._policy.clear()

    def mark_evictable(self, key: Hashable) -> None:
        self._log.append(("mark_evictable", (key,)))
        self._policy.mark_evictable(key)

    def mark_non_evictable(self, key: Hashable) -> None:
        self._log.append(("mark_non_evictable", (key,)))
        self._policy.mark_non_evictable(key)


def recording(subject: Subject, log: Log) -> Subject:
    """``subject`` whose policies record into ``log``."""

    def build(capacity: int) -> Any:
        log.append((BUILD, (capacity,)))
        return Recorder(subject.build(capacity), log)

    return replace(subject, build=build)


Program = list[tuple[Any, ...]]
"""One entry per call: the bound callable, then its arguments."""


def prepare(
    log: Log, factory: Callable[[int], Any], built: list[Any] | None = None
) -> tuple[Program, int]:
    """The log bound to fresh policies from ``factory`` and fresh blocks:
    a list of ``(callable, *args)`` and the number of policy calls in it.
    The policies are appended to ``built`` when it is given."""
    program: Program = []
    blocks: list[Block] = []
    policy: Any = None
    calls = 0
    for op, args in log:
        if op == BUILD:
            policy, blocks = factory(args[0]), []
            if built is not None:
                built.append(policy)
            continue
        if op == "set_ref":
            program.append((setattr, blocks[args[0]], "ref_cnt", args[1]))
            continue
        if op == "insert":
            ref: BlockRef = args[1]
            blocks.append(Block(ref.ref_cnt, ref.block_id))
            args = (args[0], blocks[ref.index])
        elif op == "evict":
            args = (args[0], set(args[1]))
        elif op == "touch":
            args = (list(args[0]),)
        program.append((getattr(policy, op), *args))
        calls += 1
    return program, calls


def replay(program: Program) -> float:
    """CPU seconds to run ``program`` once (it is spent afterwards). Calls
    of one or two arguments (nearly all) are made directly, not through
    ``f(*args)``, which costs CPython about a tenth more per call. (The
    calls written out as straight-line code were slower still: CPython
    specializes only instructions that run many times.)"""
    start = process_time()
    for entry in program:
        size = len(entry)
        if size == 2:
            entry[0](entry[1])
        elif size == 3:
            entry[0](entry[1], entry[2])
        else:
            entry[0](*entry[1:])
    return process_time() - start
