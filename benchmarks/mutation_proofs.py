"""``python -m benchmarks.mutation_proofs``: CrossHair's ``diffbehavior`` on
every mutant the ledger calls equivalent.

Each reference file has a session driver: a small state reached through
calls the caller contract allows (keys in flight, idle or being read,
ghosts, a protected set), then one ``evict``; the driver returns the
outcome and the policy's whole internal state. ``diffbehavior`` runs the
driver on the original class and on the mutant with symbolic arguments; a
run that exhausts every path inside the driver's bounds (arguments outside
them raise ``IgnoreAttempt``, the preconditions) proves the two equal
there. The bounds are small (two keys, n up to 3), so a proof says "equal
on every state of that size", not "equal everywhere": the ledger's reason
carries the general argument, the proof checks it mechanically.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crosshair import IgnoreAttempt

from benchmarks.mutation import ROOT, TARGETS, Mutant, Target, mutants_of
from benchmarks.mutation_ledger import load_ledger

__all__ = ["DRIVERS", "Block", "Context", "Driver", "arc_session", "lru033_session", "lru_session",
           "main", "prove"]


class Block:
    """A stand-in block status: the policies read ``ref_cnt`` only."""

    def __init__(self, ref_cnt: int, block_id: int) -> None:
        self.ref_cnt = ref_cnt
        self.block_id = block_id


class Context:
    """A stand-in ``ReqContext`` (R9): per-request state and key positions."""

    def __init__(self, positions: dict[int, int] | None = None) -> None:
        self.positions = positions or {}
        self.states: dict[type, Any] = {}

    def get_state(self, cls: type[Any], /) -> Any:
        return self.states.get(cls)

    def set_state(self, val: Any, /) -> None:
        self.states[type(val)] = val

    def get_offload_key_position(self, key: Any, /) -> int | None:
        return self.positions.get(key)


def _stored(policy: Any, refs: tuple[int, ...], *context: Any) -> None:
    """Keys 0, 1, ... stored as the manager stores them: inserted in flight
    (-1) or idle (0); a key being read (1) was idle when its load began.
    ``context``: the request context an R9 ``insert`` takes."""
    if any(ref not in (-1, 0, 1) for ref in refs):
        raise IgnoreAttempt
    for key, ref in enumerate(refs):
        block = Block(min(ref, 0), key)
        policy.insert(key, block, *context)
        if ref > 0:
            policy.mark_non_evictable(key)
            block.ref_cnt = ref


def _victims(got: Any) -> object:
    return None if got is None else [(key, block.block_id) for key, block in got]


def lru_session(policy_class: Any, k: int, r0: int, r1: int, n: int,
                p0: bool, p1: bool, p2: bool) -> object:
    """Up to two keys (states r0, r1), then evict(n, protected) with n up
    to 3 and any protected subset of {0, 1, 2} (2 is never present)."""
    if not (0 <= k <= 2 and 0 <= n <= 3):
        raise IgnoreAttempt
    policy = policy_class(cache_capacity=3)
    _stored(policy, (r0, r1)[:k])
    protected = {key for key, flag in enumerate((p0, p1, p2)) if flag}
    got = policy.evict(n, protected)
    return _victims(got), sorted(policy.blocks), list(policy.evictable_blocks)


def arc_session(policy_class: Any, ghosts: int, hit: bool, k: int, r0: int, r1: int,
                frequent: bool, n: int, p0: bool) -> object:
    """The R9 ARC at capacity 2. Up to three ghost keys stored and evicted (B1 holds at
    most two of them), a touch of the first ghost when ``hit`` (a ghost
    hit moves the target), up to two keys (states r0, r1), key 0 touched
    again when ``frequent`` (a ready key moves to T2), then evict(n,
    protected) with n up to 2 and key 0 protected or not."""
    if not (0 <= ghosts <= 3 and 0 <= k <= 2 and 0 <= n <= 2):
        raise IgnoreAttempt
    policy = policy_class(cache_capacity=2)
    context = Context()
    ghost_keys = list(range(10, 10 + ghosts))
    for key in ghost_keys:
        policy.insert(key, Block(0, key), context)
    if ghost_keys:
        policy.evict(len(ghost_keys), set())
    if hit:
        policy.touch([10], context)
    _stored(policy, (r0, r1)[:k], context)
    if frequent and k:
        policy.touch([0], context)
    got = policy.evict(n, {0} if p0 else set())
    state = ([(key, b.block_id) for key, b in policy.t1.items()],
             [(key, b.block_id) for key, b in policy.t2.items()],
             list(policy.b1), list(policy.b2), policy.target_t1_size)
    return _victims(got), state


def lru033_session(policy_class: Any, k: int, r0: int, r1: int, placed: bool, cleared: bool,
                   reused: bool, touched: bool, n: int, p0: bool, p1: bool) -> object:
    """The request-ranked LRU (0.34's, or 0.33's with touch) at capacity 3.
    Up to two keys (states r0, r1) stored by one request, at positions 0
    and 1 when ``placed``; when ``cleared``, a clear and the same keys
    stored again by the same request (its rank is stale then); when
    ``reused``, a second request accesses them and finishes reusing them;
    key 0 touched when ``touched`` (0.33's only); then evict(n, protected)
    with n up to 3 and any protected subset of {0, 1}. The outcome is what
    a caller can see: the victims, the present keys and the idle keys in
    eviction order (not the ranks' values)."""
    if not (0 <= k <= 2 and 0 <= n <= 3):
        raise IgnoreAttempt
    policy = policy_class(cache_capacity=3)
    first = Context({0: 0, 1: 1} if placed else {})
    _stored(policy, (r0, r1)[:k], first)
    if cleared:
        policy.clear()
        _stored(policy, (r0, r1)[:k], first)
    keys = list(range(k))
    if reused and keys:
        second = Context({0: 0, 1: 1})
        policy.on_request_access(keys, second)
        policy.on_request_finished([keys], set(), set(keys), second)
    if touched and k and hasattr(policy, "touch"):  # vLLM 0.33's (0.34's has none)
        policy.touch([0], first)
    got = policy.evict(n, {key for key, flag in enumerate((p0, p1)) if flag})
    return _victims(got), sorted(policy.chunks), [key for _, key in policy.idle]


@dataclass(frozen=True)
class Driver:
    session: str
    """The session function's name in this module."""
    policy_class: str
    arguments: tuple[tuple[str, str], ...]
    """(name, annotation) of the symbolic arguments after the class."""


DRIVERS: dict[str, Driver] = {
    "lru.py": Driver("lru_session", "LRUCachePolicy", (
        ("k", "int"), ("r0", "int"), ("r1", "int"), ("n", "int"),
        ("p0", "bool"), ("p1", "bool"), ("p2", "bool"))),
    "arc.py": Driver("arc_session", "ARCCachePolicy", (
        ("ghosts", "int"), ("hit", "bool"), ("k", "int"), ("r0", "int"), ("r1", "int"),
        ("frequent", "bool"), ("n", "int"), ("p0", "bool"))),
    "lru034.py": Driver("lru033_session", "LRU034CachePolicy", (
        ("k", "int"), ("r0", "int"), ("r1", "int"), ("placed", "bool"), ("cleared", "bool"),
        ("reused", "bool"), ("touched", "bool"), ("n", "int"), ("p0", "bool"), ("p1", "bool"))),
}


def _wrapper(target: Target, driver: Driver) -> str:
    module = target.path.removeprefix("src/").removesuffix(".py").replace("/", ".")
    params = ", ".join(f"{name}: {kind}" for name, kind in driver.arguments)
    names = ", ".join(name for name, _ in driver.arguments)
    lines = [
        f"from benchmarks.mutation_proofs import {driver.session} as session",
        f"from {module} import {driver.policy_class} as Original",
        f"from mutant_policy import {driver.policy_class} as Mutant",
        "",
        f"def original({params}) -> object:",
        f"    return session(Original, {names})",
        "",
        f"def mutant({params}) -> object:",
        f"    return session(Mutant, {names})",
    ]
    return "\n".join(lines) + "\n"


def prove(target: Target, mutant: Mutant, timeout: float) -> tuple[str, str]:
    """("proved" | "differs" | "not exhausted", CrossHair's last lines)."""
    driver = DRIVERS[target.file_id]
    crosshair = Path(sys.executable).with_name("crosshair")
    with tempfile.TemporaryDirectory(prefix="policyspec-proof-") as scratch:
        Path(scratch, "mutant_policy.py").write_text(mutant.source, encoding="utf-8")
        Path(scratch, "proof_wrapper.py").write_text(_wrapper(target, driver), encoding="utf-8")
        env = {**os.environ,
               "PYTHONPATH": os.pathsep.join([scratch, str(ROOT), str(ROOT / "src")])}
        done = subprocess.run(
            [str(crosshair), "diffbehavior", "proof_wrapper.original", "proof_wrapper.mutant",
             "--per_condition_timeout", str(timeout),
             "--max_uninteresting_iterations", "1000000"],
            env=env, cwd=scratch, capture_output=True, text=True, check=False)
    output = (done.stdout + done.stderr).strip()
    if "All paths exhausted" in output:
        return "proved", output.splitlines()[0]
    if "Given:" in output:
        return "differs", output
    return "not exhausted", output.splitlines()[-1] if output else f"exit {done.returncode}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mutation_proofs",
                                     description=__doc__)
    parser.add_argument("--only", action="append", help="only targets whose file name contains "
                        "this (repeatable)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="CrossHair's per-condition timeout (CPU seconds, both orders)")
    args = parser.parse_args(argv)
    ledger = load_ledger()
    for target in TARGETS:
        if args.only and not any(o in target.path for o in args.only):
            continue
        if target.file_id not in DRIVERS:
            print(f"{target.path}: no session driver, nothing proved")
            continue
        for mutant in mutants_of(target):
            if mutant.id not in ledger.equivalent:
                continue
            verdict, detail = prove(target, mutant, args.timeout)
            print(f"{verdict:<14} {mutant.id.short()}\n               {detail}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
