"""The guard's judge in a second process (``POLICYSPEC_GUARD_JUDGE=process``,
spec/production.md): judging inline lands on the manager's own thread,
which is what a user feels, so here the guard only records and a child
process runs the same ``CoreJudge`` over each buffer it writes. Nothing here
may stall the manager: the pipe is written without blocking, and a judge
that cannot keep pace ends the judging, never the recording.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from policyspec.history.core import CoreJudge, Violation
from policyspec.history.judge import in_place_exact

__all__ = ["BACKLOG_MOST", "JudgeProcess", "main", "reported_online"]

log = logging.getLogger("policyspec.guard")

BACKLOG_MOST = 64 << 20
"""Bytes of records the child may fall behind by before judging stops."""
PIPE_BYTES = 1 << 20
"""The pipe's buffer to the child (Linux's most for an unprivileged process
by default)."""
_START_WAIT = 60.0
"""Seconds the guard waits for the child to be ready."""
_CLOSE_WAIT = 60.0
"""Seconds the guard's close waits for the child to judge what it holds."""


@functools.cache
def _should_ids() -> frozenset[str]:
    from policyspec.registry import load_registry

    return frozenset(rid for rid, r in load_registry().items() if r.level == "SHOULD")


def reported_online(violation: Violation) -> bool:
    """Whether the guard's check mode reports ``violation``: core's MUSTs
    and the caller contract (the exact profile the judge keeps in place
    is the history checker's business)."""
    return violation.profile == "core" and violation.requirement not in _should_ids()


class JudgeProcess:
    """The parent's side: the child, the records not yet sent, the answers
    not yet read. ``sink`` gets each violation the child answers (the
    guard's filter and log)."""

    def __init__(self, capacity: int, sink: Callable[[Violation], None]) -> None:
        self.sink = sink
        # The child imports this very policyspec, however the parent found it.
        home = str(Path(__file__).resolve().parents[2])
        path = os.environ.get("PYTHONPATH")
        self._backlog = bytearray()
        self._answers = bytearray()
        self.judged: int | None = None
        """The calls the child judged, once it has ended normally."""
        self.child: subprocess.Popen[bytes] | None = None
        try:
            self.child = subprocess.Popen(
                [sys.executable, "-m", "policyspec.history.judge_process", str(capacity)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                env={**os.environ, "PYTHONPATH": home + (os.pathsep + path if path else "")})
        except OSError as exc:
            log.error("policyspec.guard: cannot start the judge process (%s); recording goes "
                      "on without judging", exc)
            return
        import fcntl  # POSIX only, as vLLM: the guard imports this module anywhere
        import select

        assert self.child.stdin is not None and self.child.stdout is not None
        self._to = self.child.stdin.fileno()
        self._from = self.child.stdout.fileno()
        with contextlib.suppress(AttributeError, OSError):  # Linux only; a limit may refuse
            # A buffer's worth of records at once (64 KB, the default, is a
            # quarter of one): the child is fed at each flush, not between.
            fcntl.fcntl(self._to, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        # The child is ready (imported, its judge built) before the policy's
        # first call: the calls never wait for its start.
        ready, _, _ = select.select([self._from], [], [], _START_WAIT)
        if not ready or not os.read(self._from, 64).startswith(b'{"ready"'):
            self._failed(f"it did not start within {_START_WAIT:g} s")
            return
        os.set_blocking(self._to, False)
        os.set_blocking(self._from, False)

    def send(self, text: str) -> None:
        """Hand records (JSON lines) to the child; collect its answers."""
        if self.child is None:
            return
        self._backlog += text.encode("ascii", "backslashreplace")
        self._drain()
        self.collect()
        if len(self._backlog) > BACKLOG_MOST:
            log.error("policyspec.guard: the judge process is %d MB behind; judging stops, "
                      "recording goes on", len(self._backlog) >> 20)
            self._stop()

    def _drain(self) -> None:
        while self._backlog:
            try:
                sent = os.write(self._to, self._backlog)
            except BlockingIOError:
                return
            except OSError as exc:  # the child is gone
                self._failed(f"cannot write to it ({exc})")
                return
            del self._backlog[:sent]

    def collect(self) -> None:
        """Read the answers the child has written so far."""
        if self.child is None:
            return
        while True:
            try:
                chunk = os.read(self._from, 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                if self.child.poll() is not None and self.child.returncode != 0:
                    self._failed(f"it ended with status {self.child.returncode}")
                break
            self._answers += chunk
        self._answer()

    def _answer(self) -> None:
        lines = self._answers.split(b"\n")
        self._answers = bytearray(lines.pop())
        for line in lines:
            answer = json.loads(line)
            if "error" in answer:
                self._failed(f"its judge failed: {answer['error']}")
                return
            if "judged" in answer:
                self.judged = int(answer["judged"])
                continue
            self.sink(Violation(**answer))

    def _failed(self, why: str) -> None:
        log.error("policyspec.guard: the judge process failed (%s); judging stops, recording "
                  "goes on", why)
        self._stop()

    def _stop(self) -> None:
        child, self.child = self.child, None
        self._backlog.clear()
        if child is None:
            return
        child.kill()
        for pipe in (child.stdin, child.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        child.wait()

    def close(self) -> None:
        """Send what is left, let the child judge it, read every answer."""
        child = self.child
        if child is None:
            return
        try:
            os.set_blocking(self._to, True)
            os.set_blocking(self._from, True)
            # Both pipes at once: a child with many answers to write would
            # otherwise stop reading while the rest is sent to it.
            answers, _ = child.communicate(bytes(self._backlog), timeout=_CLOSE_WAIT)
        except (OSError, subprocess.TimeoutExpired) as exc:
            self._failed(f"it did not end ({exc})")
            return
        self._backlog.clear()
        self._answers += answers
        self.child = None
        if child.returncode != 0:
            log.error("policyspec.guard: the judge process ended with status %d",
                      child.returncode)
        self._answer()


def main(argv: list[str] | None = None) -> int:
    """The child: records from stdin, one JSON line per violation out."""
    args = sys.argv[1:] if argv is None else argv
    out = sys.stdout

    def answer(violation: Violation) -> None:
        if reported_online(violation):
            out.write(json.dumps(dataclasses.asdict(violation)) + "\n")
            out.flush()

    judge = CoreJudge(int(args[0]), ordered=in_place_exact(), sink=answer)
    out.write('{"ready": true}\n')
    out.flush()
    try:
        for records in _batches(sys.stdin.buffer.fileno()):
            judge.feed(records)
    except Exception as exc:  # the parent logs it and stops judging
        out.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"}) + "\n")
    else:
        out.write(json.dumps({"judged": judge.call + 1}) + "\n")
    out.flush()
    return 0


def _batches(fd: int) -> Iterator[list[Any]]:
    """The records of the lines read from ``fd``, a batch per read: each
    batch parsed as one JSON array (one call into the parser, not one per
    record: the child must keep pace with the guard)."""
    pending = b""
    while chunk := os.read(fd, 1 << 20):
        data = pending + chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            pending = data
            continue
        pending = data[cut + 1:]
        lines = b",".join(filter(None, data[:cut].split(b"\n")))
        if lines:
            batch: list[Any] = json.loads(b"[" + lines + b"]")
            yield batch
    if pending.strip():
        yield [json.loads(pending)]


if __name__ == "__main__":
    # The child ends when its input does: a Ctrl-C meant for the server (the
    # whole process group gets it) must not cut the judging of what was sent.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise SystemExit(main())
