"""The policy side of the line protocol for Python policies:
``python -m policyspec.lineproto.serve TARGET`` (spec/protocol.md).
``check --isolate`` runs the policy through it in a child process, so a
policy that ends its process, crashes or exhausts memory ends the child,
not the checker (API-PROCESS-ALIVE). It loads TARGET with the same adapters
and gives the policy the same environment as an in-process check, so both
judge the same policy.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
from collections import deque
from collections.abc import Sequence
from typing import Any

from policyspec.environment import LocalEnvironment, active, controlled
from policyspec.harness.keymap import KeyMap
from policyspec.harness.shapes import KEY_SHAPES, passed
from policyspec.lineproto.child import PROTOCOL
from policyspec.vllm.standins.gaps import gap_of

__all__ = ["main"]


class Server:
    """Holds one policy and its blocks; answers requests."""

    def __init__(
        self, target: str, *, api: str | None, stand_in: bool, placeholders: Sequence[str] = ()
    ) -> None:
        from policyspec.adapters import load_subject

        self.subject = load_subject(target, stand_in=stand_in, api=api,
                                    placeholders=placeholders)
        self.policy: Any = None
        self.blocks: dict[int, Any] = {}
        self.keys = KeyMap(self.subject.make_key)
        self.key = self.keys.real
        self.environment = LocalEnvironment()
        """The current policy's clock and random stream (policyspec.environment)."""
        self.given: deque[tuple[str, Any, Any]] = deque(maxlen=16)
        """The last argument containers handed to the policy, each with a
        copy taken before its call: the runner's own copies never reach the
        policy, so only this process can see the policy change them."""

    def wire_key(self, real: object) -> object:
        k = self.keys.model(real)
        return repr(real) if k is None else k

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """``_answer`` (a policy call with its environment in place), plus
        after every policy call ``clock`` once the policy read its clock, and
        ``args``: whether the policy changed any container it was given
        (spec/protocol.md)."""
        op = request.get("op")
        if op in ("hello", "create", "set_ref", "clock"):
            return self._answer(request)
        with active(self.environment):
            try:
                reply = self._answer(request)
            except MemoryError:
                raise
            except (Exception, SystemExit) as exc:  # the policy's fault, with what it read
                reply = _raised(exc, op)
        if self.given:
            reply["args"] = self._changed()
        if self.environment.read_clock:
            reply["clock"] = {"read": True,
                              "wall_after_back": self.environment.read_wall_after_back}
        return reply

    def _changed(self) -> str:
        """"" when every kept container still equals its copy, else what
        changed (and the containers are forgotten: reported once)."""
        for op, container, original in self.given:
            if container != original:
                self.given.clear()
                what = "keys list" if op == "touch" else "protected set"
                return (f"the {what} given to {op} was changed by the policy (now "
                        f"{len(container)} items, was {len(original)})")
        return ""

    def container(self, op: str, request: dict[str, Any], reals: list[Any]) -> Any:
        """The keys of ``op`` in the shape the runner passed its own policy
        (``shape``; a list for touch, a set for evict when it says none),
        kept with a copy when the policy could change it (a list or a set)."""
        shape = str(request.get("shape", "list" if op == "touch" else "set"))
        given = passed(shape if shape in KEY_SHAPES else "list", reals)
        if isinstance(given, list):
            self.given.append((op, given, list(given)))
        elif isinstance(given, set):
            self.given.append((op, given, set(given)))
        return given

    def handle(self, block: object) -> object:
        """The wire handle of a block the policy returned: its id, or a
        negative id when it is not the very object inserted under that id."""
        if block is None:
            return None
        block_id = getattr(block, "block_id", getattr(block, "chunk_id", None))
        ref = getattr(block, "ref_cnt", None)
        if not isinstance(block_id, int) or not isinstance(ref, int):
            return {"id": -1, "ref_cnt": 0}
        if self.blocks.get(block_id) is not block:
            return {"id": -1 - block_id, "ref_cnt": ref}
        return {"id": block_id, "ref_cnt": ref}

    def _answer(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        if op == "hello":
            return {"ok": True, "protocol": PROTOCOL, "name": self.subject.name,
                    "capabilities": [*sorted(self.subject.capabilities & {"clear", "mark"}),
                                     "clock"],
                    "touch": self.subject.has("touch")}
        if op == "create":
            self.blocks = {}
            self.given.clear()
            self.environment = LocalEnvironment(int(request.get("seed", 0)))
            with active(self.environment):
                self.policy = self.subject.build(int(request["capacity"]))
            return {"ok": True}
        if op == "clock":
            self.environment.step(int(request["ms"]))
            return {"ok": True}
        if op == "set_ref":
            self.blocks[int(request["id"])].ref_cnt = int(request["ref_cnt"])
            return {"ok": True}
        policy = self.policy
        if op == "insert":
            wire = request["block"]
            block = self.subject.make_block(int(wire["ref_cnt"]), int(wire["id"]))
            self.blocks[int(wire["id"])] = block
            policy.insert(self.key(request["key"]), block)
            return {"ok": True}
        if op == "get":
            return {"ok": True, "result": self.handle(policy.get(self.key(request["key"])))}
        if op == "touch":
            keys = self.container("touch", request, [self.key(k) for k in request["keys"]])
            policy.touch(keys)
            return {"ok": True}
        if op == "evict":
            protected = self.container("evict", request,
                                       [self.key(k) for k in request["protected"]])
            return {"ok": True, "result": self.pairs(policy.evict(int(request["n"]), protected))}
        if op in ("remove", "mark_evictable", "mark_non_evictable"):
            getattr(policy, op)(self.key(request["key"]))
            return {"ok": True}
        if op == "clear":
            policy.clear()
            return {"ok": True}
        return {"ok": False, "error": f"unknown op {op!r}"}

    def pairs(self, result: object) -> object:
        """evict's result on the wire, keeping what is wrong with its shape
        visible to the runner (a non-list stays a non-list)."""
        if result is None:
            return None
        if not isinstance(result, list):
            return {"not a list": type(result).__name__}
        out: list[object] = []
        for item in result:
            if isinstance(item, tuple) and len(item) == 2:
                out.append([self.wire_key(item[0]), self.handle(item[1])])
            else:
                out.append({"not a pair": repr(item)[:80]})
        return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m policyspec.lineproto.serve")
    parser.add_argument("target")
    parser.add_argument("--api")
    parser.add_argument("--no-stand-in", action="store_true")
    parser.add_argument("--placeholder", action="append", default=[], dest="placeholders")
    parser.add_argument("--memory-limit", type=int, default=0, metavar="MB",
                        help="address-space limit of this process (0: none)")
    args = parser.parse_args(argv)
    if args.memory_limit > 0:
        limit = args.memory_limit * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    server = Server(args.target, api=args.api, stand_in=not args.no_stand_in,
                    placeholders=args.placeholders)
    with controlled():
        return _serve(server)


def _raised(exc: BaseException, op: object) -> dict[str, Any]:
    """The answer for a call that raised; with ``gap`` when the exception
    is policyspec's own (the stand-ins lack what the policy reached), so
    that the runner stops with that line instead of judging the policy."""
    reply: dict[str, Any] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    gap = gap_of(exc, op if isinstance(op, str) else None)
    if gap is not None:
        reply["gap"] = gap
    return reply


def _serve(server: Server) -> int:
    """Answer each request line until stdin ends."""
    out = sys.stdout
    for line in sys.stdin:
        try:
            reply = server.answer(json.loads(line))
        except MemoryError:
            # What the memory limit stands for: in vLLM's process the policy
            # would now be killed. End the child so the runner reports it.
            os._exit(137)
        except (Exception, SystemExit) as exc:  # the policy's fault travels as an answer
            reply = _raised(exc, None)
        out.write(json.dumps(reply, separators=(",", ":")) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
