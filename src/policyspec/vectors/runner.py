"""Running golden vectors against a policy: ``policyspec replay``.

The runner plays the calls of each case on a fresh policy from a
``Subject`` (a Python class through the adapters, or a child process
through the line protocol) and checks only what the case says: each
expected result, that every call returns normally, and that no block's
``ref_cnt`` or id changes except by the case's own ``set_ref``. It uses no
model: a runner in another language does the same from spec/vectors.md.
Under a ``harness.watchdog.Watchdog`` a call that hangs fails its case.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from policyspec.harness.watchdog import CallTimeout
from policyspec.harness.watchdog import current as watch
from policyspec.subject import Subject
from policyspec.vectors.schema import read_vectors, vector_files
from policyspec.vllm.standins.gaps import raise_if_gap

__all__ = ["CaseResult", "replay_case", "replay_directory"]


@dataclass(frozen=True)
class CaseResult:
    """The outcome of one case. ``level`` is None when it passed, else the
    level of what failed (MUST, or SHOULD for a refused core eviction)."""

    file: str
    name: str
    profile: str
    level: str | None = None
    step: int = 0
    message: str = ""
    exposes: str | None = None
    victims: tuple[int, ...] | None = None
    """The keys a failing evict returned, when they could be read (for the
    timeline of the HTML report)."""

    @property
    def passed(self) -> bool:
        return self.level is None


class _Failed(Exception):
    def __init__(self, message: str, level: str = "MUST",
                 victims: list[int | None] | None = None) -> None:
        super().__init__(message)
        self.level = level
        self.victims = victims


class _Run:
    """The state of one case while it runs."""

    def __init__(self, subject: Subject, case: dict[str, Any]) -> None:
        self.subject = subject
        self.policy = subject.build(case["capacity"])
        self.blocks: dict[int, Any] = {}
        self.written: dict[int, int] = {}
        self.keys: dict[Hashable, int] = {}

    def key(self, k: int) -> Hashable:
        real = self.subject.make_key(k)
        self.keys[real] = k
        return real

    def call(self, call: dict[str, Any]) -> None:
        op = call["op"]
        if op == "set_ref":
            self.blocks[call["id"]].ref_cnt = call["ref_cnt"]
            self.written[call["id"]] = call["ref_cnt"]
            return
        watch.begin(op)
        try:
            result = self._invoke(op, call)
        except CallTimeout:
            raise _Failed("did not return within the call time limit") from None
        except Exception as exc:
            raise_if_gap(exc)
            raise _Failed(f"raised {type(exc).__name__}: {exc}") from None
        finally:
            watch.op = None
        if "expect" in call:
            if op == "get":
                self._check_get(result, call["expect"])
            else:
                self._check_evict(result, call["n"], call["expect"])
        self._check_blocks()

    def _invoke(self, op: str, call: dict[str, Any]) -> Any:
        policy = self.policy
        if op == "insert":
            spec = call["block"]
            block = self.subject.make_block(spec["ref_cnt"], spec["id"])
            self.blocks[spec["id"]] = block
            self.written[spec["id"]] = spec["ref_cnt"]
            return policy.insert(self.key(call["key"]), block)
        if op == "touch":
            return policy.touch([self.key(k) for k in call["keys"]])
        if op == "evict":
            return policy.evict(call["n"], {self.key(k) for k in call["protected"]})
        if op == "clear":
            return policy.clear()
        return getattr(policy, op)(self.key(call["key"]))

    def _check_get(self, got: object, expect: dict[str, Any]) -> None:
        want = expect["block"]
        if want is None:
            if got is not None:
                raise _Failed(f"returned {_short(got)}, expected None (the key is absent)")
        elif got is None:
            raise _Failed(f"returned None; expected block {want}")
        elif got is not self.blocks[want]:
            raise _Failed(f"returned {_short(got)}, not block {want} that was inserted")

    def _check_evict(self, got: object, n: int, expect: dict[str, Any]) -> None:
        if "victims" in expect:
            want = expect["victims"]
            if want is None:
                if got is not None:
                    raise _Failed(f"returned {self._show(got)}, expected None")
                return
            wanted = [k for k, _ in want]
            if got is None:
                raise _Failed(f"returned None, expected {wanted}")
            pairs = self._pairs(got)
            keys = [k for k, _ in pairs]
            if keys != wanted:
                raise _Failed(f"returned {keys}, expected {wanted}", victims=keys)
            self._check_identity(pairs, dict(want), keys)
            return
        allowed: dict[int, int] = {k: i for k, i in expect["any_of"]}
        if got is None:
            raise _Failed(f"returned None, although {n} of the eligible keys {sorted(allowed)} "
                          "were asked for", expect.get("none_level", "SHOULD"))
        pairs = self._pairs(got)
        keys = [k for k, _ in pairs]
        if len(keys) != expect["count"] or len(set(keys)) != len(keys) or not (
                set(keys) <= set(allowed)):
            raise _Failed(f"returned {keys}; expected {expect['count']} distinct keys among "
                          f"{sorted(allowed)}", victims=keys)
        self._check_identity(pairs, allowed, keys)

    @staticmethod
    def _check_identity(pairs: list[tuple[int | None, int | None]], ids: dict[int, int],
                        keys: list[int | None]) -> None:
        for key, ident in pairs:
            if key is not None and ident != ids[key]:
                what = "an object never inserted" if ident is None else f"block {ident}"
                raise _Failed(f"returned key {key} with {what}, not block {ids[key]} that was "
                              "inserted under it", victims=keys)

    def _pairs(self, got: object) -> list[tuple[int | None, int | None]]:
        """(model key, block id) for each returned pair; the id is None when
        the block is not the very object inserted under that id."""
        if not isinstance(got, list):
            raise _Failed(f"returned {got!r}, not None or a list of (key, block) pairs")
        out: list[tuple[int | None, int | None]] = []
        for item in got:
            if not (isinstance(item, tuple) and len(item) == 2):
                raise _Failed(f"returned an item {item!r}, not a (key, block) pair")
            real, block = item
            try:
                key = self.keys.get(real)
            except TypeError:
                key = None
            ident = next((i for i, b in self.blocks.items() if b is block), None)
            out.append((key, ident))
        return out

    def _show(self, got: object) -> str:
        try:
            return str([k for k, _ in self._pairs(got)])
        except _Failed:
            return repr(got)

    def _check_blocks(self) -> None:
        for ident, block in self.blocks.items():
            if block.ref_cnt != self.written[ident] or block.block_id != ident:
                raise _Failed(f"block {ident} now reads ref_cnt={block.ref_cnt}, "
                              f"block_id={block.block_id}; the runner wrote "
                              f"ref_cnt={self.written[ident]}, id {ident} (the policy must not "
                              "write either)")


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _describe(call: dict[str, Any]) -> str:
    op = call["op"]
    if op == "insert":
        return f"insert(key {call['key']}, block {call['block']['id']})"
    if op == "touch":
        return f"touch({call['keys']})"
    if op == "evict":
        return f"evict({call['n']}, {set(call['protected']) or '{}'})"
    if op == "clear":
        return "clear()"
    return f"{op}(key {call['key']})"


def replay_case(subject: Subject, case: dict[str, Any], file: str = "") -> CaseResult:
    """Run one case on a fresh policy."""
    base = {"file": file, "name": case["name"], "profile": case["profile"],
            "exposes": case.get("exposes")}
    try:
        run = _Run(subject, case)
    except Exception as exc:
        raise_if_gap(exc)
        return CaseResult(**base, level="MUST", message=f"building the policy raised "
                          f"{type(exc).__name__}: {exc}")
    for step, call in enumerate(case["calls"], 1):
        try:
            run.call(call)
        except _Failed as failed:
            victims = failed.victims
            known = None if victims is None or None in victims else tuple(
                k for k in victims if k is not None)
            return CaseResult(**base, level=failed.level, step=step,
                              message=f"{_describe(call)} {failed}", victims=known)
    return CaseResult(**base)


def replay_directory(
    subject: Subject, directory: Path, profiles: Iterable[str]
) -> list[CaseResult]:
    """Every case of every vector file in ``directory`` whose profile is in
    ``profiles`` (a profile's ``includes``), in file and line order."""
    wanted = set(profiles)
    results = []
    for path in vector_files(directory):
        _, cases = read_vectors(path)
        for case in cases:
            if case["profile"] in wanted:
                results.append(replay_case(subject, case, path.name))
    return results
