"""A policy in another process, seen as a seed-API policy: ``ExecTarget``
gives a ``Subject`` whose ``build(capacity)`` (re)creates the policy in the
child and whose policies and blocks speak spec/protocol.md.

Every engine and the vector runner drive it like a Python policy. Blocks
are handles: the child keeps one object per block id, the manager's
``ref_cnt`` writes travel as ``set_ref`` messages, and a handle the child
returns is mapped back to the very Python block inserted under that id (or
to a stranger when the id is unknown), so the harness's identity and
no-write checks work unchanged.
"""

from __future__ import annotations

import weakref
from collections.abc import Collection, Hashable, Iterable
from typing import Any

from policyspec.environment import run_seed
from policyspec.harness.failures import ProcessDied
from policyspec.harness.shapes import shape_of
from policyspec.harness.watchdog import CallTimeout
from policyspec.harness.watchdog import current as watch
from policyspec.lineproto.child import CHILD_GRACE, PROTOCOL, Child, ChildError, ChildTimeout
from policyspec.run.budget import PIPE_SCALE
from policyspec.subject import ALL_CAPABILITIES, Subject, offload_key
from policyspec.vllm.standins.gaps import StandinGap

__all__ = [
    "KEY_FORMATS",
    "ChildDied",
    "ExecTarget",
    "PolicyError",
    "RemoteBlock",
    "RemoteEnvironment",
    "RemoteKeyError",
    "RemotePolicy",
]

KEY_FORMATS = ("int", "hex")
"""How model key k travels: ``int`` as the JSON number k, ``hex`` as the
hex string of vLLM's OffloadKey bytes for k (opaque 40-character text)."""


class ChildDied(ChildError, ProcessDied):
    """The child process ended during a call: the policy's process ended
    (API-PROCESS-ALIVE), and the child is gone (a ChildError)."""


class PolicyError(Exception):
    """The policy in the child raised (the answer had ``"ok": false``)."""


class RemoteKeyError(PolicyError, KeyError):
    """The child's error text starts with ``KeyError``: raised as a KeyError
    too, since the seed's strict operations are specified to raise one."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class RemoteBlock:
    """The runner's side of a block handle. Writing ``ref_cnt`` (the
    manager's write) sends ``set_ref`` once the block was inserted."""

    __slots__ = ("_ref", "_target", "block_id")

    def __init__(self, target: ExecTarget | None, ref_cnt: int, block_id: int) -> None:
        self._target = target
        self._ref = ref_cnt
        self.block_id = block_id

    @property
    def ref_cnt(self) -> int:
        return self._ref

    @ref_cnt.setter
    def ref_cnt(self, value: int) -> None:
        self._ref = value
        if self._target is not None:
            self._target.write_ref(self, value)

    @property
    def is_ready(self) -> bool:
        return self._ref >= 0

    def wire(self) -> dict[str, int]:
        return {"id": self.block_id, "ref_cnt": self._ref}

    def __repr__(self) -> str:
        return f"RemoteBlock(ref_cnt={self._ref}, block_id={self.block_id})"

    def __deepcopy__(self, memo: dict[int, Any]) -> RemoteBlock:
        raise TypeError("a block handle of a child process cannot be copied")


class RemotePolicy:
    """The seed API, each call one request to the child."""

    def __init__(self, target: ExecTarget, generation: int) -> None:
        self._target = target
        self._generation = generation

    def _ask(self, message: dict[str, Any]) -> Any:
        return self._target.ask(self._generation, message)

    def get(self, key: Hashable) -> Any:
        return self._target.block_of(self._ask({"op": "get", "key": key}))

    def insert(self, key: Hashable, block: Any) -> None:
        self._target.register(block)
        self._ask({"op": "insert", "key": key,
                   "block": {"id": block.block_id, "ref_cnt": block.ref_cnt}})

    def remove(self, key: Hashable) -> None:
        self._ask({"op": "remove", "key": key})

    def touch(self, keys: Iterable[Hashable]) -> None:
        shape = shape_of(keys)  # (before a generator is read)
        self._ask({"op": "touch", "keys": list(keys), "shape": shape})

    def evict(self, n: int, protected: Collection[Hashable]) -> Any:
        try:
            shown = sorted(protected)  # type: ignore[type-var]
        except TypeError:
            shown = list(protected)
        result = self._ask({"op": "evict", "n": n, "protected": shown,
                            "shape": shape_of(protected)})
        if not isinstance(result, list):
            return result
        pairs: list[Any] = []
        for item in result:
            if isinstance(item, list) and len(item) == 2:
                pairs.append((item[0], self._target.block_of(item[1])))
            else:
                pairs.append(item)
        return pairs

    def clear(self) -> None:
        self._ask({"op": "clear"})

    def mark_evictable(self, key: Hashable) -> None:
        self._ask({"op": "mark_evictable", "key": key})

    def mark_non_evictable(self, key: Hashable) -> None:
        self._ask({"op": "mark_non_evictable", "key": key})

    def __deepcopy__(self, memo: dict[int, Any]) -> RemotePolicy:
        raise TypeError("a policy living in a child process cannot be copied")


class RemoteEnvironment:
    """The clock and random stream of the policy in a child process
    (policyspec.environment): the child keeps them (``seed`` in ``create``),
    clock steps travel as ``clock`` requests, and the child's answers say
    whether the policy read the clock (spec/protocol.md). A child that does
    not offer the ``clock`` capability reports no reads, so it never gets
    clock steps."""

    def __init__(self, target: ExecTarget) -> None:
        self._target = target

    @property
    def read_clock(self) -> bool:
        return self._target.clock_read

    @property
    def read_wall_after_back(self) -> bool:
        return self._target.wall_after_back

    def step(self, ms: int) -> None:
        self._target.step_clock(ms)

    def enter(self) -> object:
        return None

    def leave(self, outer: object) -> None:
        return None


class ExecTarget:
    """A policy program run as ``command``; ``subject`` is what the engines
    drive. Close it (or use ``with``) to end the child; it is also ended
    when the object is collected and at interpreter exit."""

    def __init__(self, command: str, *, timeout: float = 10.0, keys: str = "int") -> None:
        if keys not in KEY_FORMATS:
            raise ValueError(f"keys must be one of {KEY_FORMATS}, got {keys!r}")
        self.command = command
        self.child = Child(command, timeout=timeout)
        self._finalizer = weakref.finalize(self, Child.close, self.child)
        self.generation = 0
        self.blocks: dict[int, RemoteBlock] = {}
        self.args_report: str | None = None
        """What the child's last answer said of the argument containers
        (its ``args`` field), until ``take_args_report`` reads it."""
        self.clock_read = False
        self.wall_after_back = False
        """What the child's answers said of the current policy's clock reads."""
        hello = self._hello()
        wanted = hello.get("capabilities", sorted(ALL_CAPABILITIES))
        capabilities = frozenset(c for c in wanted if c in ALL_CAPABILITIES) - {"touch"}
        if hello.get("touch", True) is not False:  # a vLLM 0.34 (R10) runner says false
            capabilities |= {"touch"}
        self.controls_clock = "clock" in wanted
        """The child runs its policy on a virtual clock it steps on request."""
        name = str(hello.get("name") or command)
        make_key = _int_key if keys == "int" else _hex_key
        self.subject = Subject(
            name=f"--exec {command!r}",
            build=self.build,
            make_block=self.make_block,
            make_key=make_key,
            capabilities=capabilities,
            argument_report=self.take_args_report,
            environment=self.environment,
            work_scale=PIPE_SCALE,
            notes=(f"policy {name!r} in a child process (spec/protocol.md, keys as {keys})",),
        )

    def _hello(self) -> dict[str, Any]:
        hello = self.child.start()
        if not hello.get("ok"):
            self.child.close()
            raise ChildError(f"{self.command!r} refused hello: {hello.get('error')}")
        if hello.get("protocol", PROTOCOL) != PROTOCOL:
            self.child.close()
            raise ChildError(f"{self.command!r} speaks protocol {hello.get('protocol')}, "
                             f"this runner speaks {PROTOCOL}")
        return hello

    # -- the Subject's side ---------------------------------------------------

    def build(self, capacity: int) -> RemotePolicy:
        """A fresh policy: starts the child if it is not running, then
        ``create`` replaces whatever policy it held."""
        if not self.child.alive:
            self._hello()
        self.generation += 1
        self.blocks = {}
        # What the child said of the last policy's arguments is that policy's
        # (a failure may have ended its run before the harness read it): a
        # report left over would be charged to the new policy's first call,
        # so the same trace would fail at another step on every replay.
        self.args_report = None
        self.clock_read = self.wall_after_back = False
        answer = self.child.request({"op": "create", "capacity": capacity, "seed": run_seed()})
        if not answer["ok"]:
            raise PolicyError(f"create({capacity}) failed: {answer.get('error')}")
        return RemotePolicy(self, self.generation)

    def environment(self) -> RemoteEnvironment:
        """The environment of the policy about to be built (``Subject.environment``)."""
        return RemoteEnvironment(self)

    def step_clock(self, ms: int) -> None:
        """A clock step of the current policy's clock (nothing for a child
        that does not offer ``clock``)."""
        if not self.controls_clock or not self.child.alive:
            return
        answer = self.child.request({"op": "clock", "ms": ms})
        if not answer["ok"]:
            raise ChildError(f"clock step of {ms} ms failed: {answer.get('error')}")

    def make_block(self, ref_cnt: int, block_id: int) -> RemoteBlock:
        return RemoteBlock(self, ref_cnt, block_id)

    # -- the policies' side ---------------------------------------------------

    def ask(self, generation: int, message: dict[str, Any]) -> Any:
        if generation != self.generation:
            raise ChildError("this policy object was replaced by a newer create (only the "
                             "latest policy of a child can be driven)")
        # A lowered call limit (a hang being shrunk) lowers the child's too.
        limit = watch.limit + CHILD_GRACE if watch.limit > 0 else None
        try:
            answer = self.child.request(message, limit)
        except ChildTimeout as exc:
            # A call stopped at the time limit is a hang (API-RETURNS), whatever
            # the killed child looks like afterwards.
            watch.expired += 1
            raise CallTimeout(str(exc)) from None
        except ChildError as exc:
            if not self.child.alive:
                raise ChildDied(str(exc)) from None
            raise
        args = answer.get("args")
        if isinstance(args, str):
            self.args_report = args
        clock = answer.get("clock")
        if isinstance(clock, dict):
            self.clock_read = bool(clock.get("read"))
            self.wall_after_back = bool(clock.get("wall_after_back"))
        if not answer["ok"]:
            gap = answer.get("gap")
            if isinstance(gap, str):  # policyspec's own gap in the child, not the policy's
                raise StandinGap(gap)
            text = str(answer.get("error", "the policy raised"))
            raise (RemoteKeyError if text.startswith("KeyError") else PolicyError)(text)
        return answer.get("result")

    def take_args_report(self) -> str | None:
        """The child's report on the arguments since the last call of this
        (None: it reported nothing; "": unchanged; else what changed)."""
        report, self.args_report = self.args_report, None
        return report

    def register(self, block: Any) -> None:
        if isinstance(block, RemoteBlock):
            self.blocks[block.block_id] = block

    def write_ref(self, block: RemoteBlock, value: int) -> None:
        if self.blocks.get(block.block_id) is not block or not self.child.alive:
            return
        answer = self.child.request({"op": "set_ref", "id": block.block_id, "ref_cnt": value})
        if not answer["ok"]:
            raise ChildError(f"set_ref of block {block.block_id} failed: {answer.get('error')}")

    def block_of(self, wire: object) -> Any:
        """The Python block for a handle the child returned: the one inserted
        under its id (taking the child's ref_cnt, so a write by the policy
        shows), or a stranger for an id never inserted."""
        if not isinstance(wire, dict) or not isinstance(wire.get("id"), int):
            return wire
        ref = wire.get("ref_cnt")
        block = self.blocks.get(wire["id"])
        if block is None:
            return RemoteBlock(None, ref if isinstance(ref, int) else 0, wire["id"])
        if isinstance(ref, int):
            block._ref = ref
        return block

    # -- lifetime -------------------------------------------------------------

    def close(self) -> None:
        self.child.close()

    def __enter__(self) -> ExecTarget:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _int_key(k: int) -> int:
    return k


def _hex_key(k: int) -> str:
    return offload_key(k).hex()
