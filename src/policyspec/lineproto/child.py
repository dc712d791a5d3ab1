"""One child process spoken to in JSON lines (spec/protocol.md): start it,
send a request, read its one-line answer, stop it.

Every way out reaps the process: ``close`` ends its stdin, waits a little,
then signals its whole process group (the child runs in its own session,
so a shell wrapper and its children go too). A request that fails half
way (no answer in time, the child died, an interrupt) closes the child as
well: the line stream can no longer be trusted.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shlex
import signal
import subprocess
import time
from typing import Any

__all__ = ["CHILD_GRACE", "Child", "ChildError", "ChildTimeout"]

PROTOCOL = 1
CHILD_GRACE = 2.0
"""Seconds a child is given beyond the call time limit before its silence is
a hang: its limit is wall time (this process cannot read the child's CPU
time), so it allows for the pipe and a busy machine."""
"""The protocol revision this runner speaks (spec/protocol.md)."""


class ChildError(Exception):
    """The child could not answer: it exited, hung, or sent something that
    is not a protocol line. The policy is judged as if the call raised."""


class ChildTimeout(ChildError):
    """The child did not answer within its time limit: the call hung, and the
    child was killed for it (its end is the limit's doing, not the policy's)."""


class Child:
    """A running policy process. ``argv`` is the command split like a shell
    would (no shell runs it)."""

    def __init__(self, command: str, *, timeout: float = 10.0) -> None:
        self.command = command
        self.argv = shlex.split(command)
        if not self.argv:
            raise ValueError("the command is empty")
        self.timeout = timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self._buffer = b""

    # -- lifetime ---------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> dict[str, Any]:
        """Start the process and say hello; returns its hello answer."""
        self.close()
        try:
            self.proc = subprocess.Popen(
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            raise ChildError(f"cannot start {self.command!r}: {exc.strerror or exc}") from None
        self._buffer = b""
        return self.request({"op": "hello", "protocol": PROTOCOL})

    def close(self, grace: float = 2.0) -> None:
        """End the process (EOF on stdin; after ``grace`` seconds, signals
        to its process group) and reap it."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(timeout=1.0)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if proc.stdout is not None:
            proc.stdout.close()
        # A group member left behind by the child (the child itself is reaped).
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)

    # -- requests -----------------------------------------------------------

    def request(self, message: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """Send one request and return the answer. A failure on the way
        closes the child and raises ChildError (or the interrupt)."""
        if not self.alive:
            raise ChildError(self._gone())
        try:
            self._write(message)
            return self._read(self.timeout if timeout is None else min(timeout, self.timeout))
        except BaseException:  # no answer, a time limit or Ctrl-C mid-exchange
            self.close(grace=0.0)
            raise

    def _write(self, message: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise ChildError(self._gone()) from None

    def _read(self, timeout: float) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ChildTimeout(f"{self.command!r} did not answer within {timeout:g}s")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                raise ChildError(self._gone())
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            answer = json.loads(line)
        except ValueError:
            shown = line[:120].decode(errors="replace")
            raise ChildError(f"{self.command!r} answered with a line that is not JSON: "
                             f"{shown!r}") from None
        if not isinstance(answer, dict) or not isinstance(answer.get("ok"), bool):
            raise ChildError(f"{self.command!r} answered {answer!r}; the protocol requires an "
                             'object with "ok": true or false')
        return answer

    def _gone(self) -> str:
        code = None
        if self.proc is not None:
            try:
                code = self.proc.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                code = None
        if code is None:
            return f"{self.command!r} is not running"
        return f"{self.command!r} exited with code {code}"
