"""Per-call time limit: a watchdog thread ends a policy call that does not
return (API-RETURNS). The limit is this process's CPU time, not wall time,
so whether a call overran does not depend on the machine's load (a verdict
must not); a call that blocks without using CPU is caught by wall time at
``WALL_FACTOR`` times the limit (spec/check.md, "Hostile policies").
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from time import monotonic, process_time
from types import FrameType, TracebackType

__all__ = ["WALL_FACTOR", "CallTimeout", "Watchdog", "current"]

WALL_FACTOR = 10
"""A call that has used less CPU than the limit is still ended once its
wall time reaches this many limits (spec/check.md, "Hostile policies")."""


class CallTimeout(BaseException):
    """Raised inside a policy call that overran the limit. A BaseException so
    that a policy's ``except Exception`` cannot swallow it."""


class _Current:
    """What the harness is doing right now (shared with the watchdog)."""

    __slots__ = ("expired", "limit", "op", "since")

    def __init__(self) -> None:
        self.op: str | None = None
        self.since = 0.0
        """The process's CPU time (``process_time``) when the call began."""
        self.limit = 0.0
        """Seconds a call may take; the watchdog reads it on every tick, so
        it can be lowered while a hang is being shrunk. 0 while no watchdog
        runs."""
        self.expired = 0
        """Calls this process has ended at the limit (``CallTimeout`` raised):
        what a run spent waiting on hangs, as a count."""

    def begin(self, op: str) -> None:
        """A policy call of ``op`` starts now. The clock is read only while
        a watchdog runs: under CrossHair (``prove``) every read is a
        symbolic value whose paths the search pays for. (``process_time``
        is the real clock, taken when this module was imported: a policy's
        clock is virtual while its calls run, policyspec.environment.)"""
        self.op = op
        if self.limit:
            self.since = process_time()

    def restart(self) -> None:
        """The marked call (or chunk of calls) starts over now."""
        self.since = process_time()


current = _Current()


class Watchdog:
    """Context manager enforcing ``limit`` seconds per policy call."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.enforced = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._previous: object = None

    def __enter__(self) -> Watchdog:
        if (
            self.limit > 0
            and hasattr(signal, "pthread_kill")
            and threading.current_thread() is threading.main_thread()
        ):
            self._previous = signal.signal(signal.SIGALRM, _raise_timeout)
            self._thread = threading.Thread(
                target=self._watch, args=(threading.main_thread().ident,), daemon=True,
                name="policyspec-watchdog",
            )
            current.limit = self.limit
            self._thread.start()
            self.enforced = True
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            signal.signal(signal.SIGALRM, self._previous)  # type: ignore[arg-type]
            current.limit = 0.0
        current.op = None

    @contextmanager
    def shortened(self, limit: float) -> Iterator[None]:
        """A lower limit (never a higher one) while the block runs: replays
        of a call that hangs cost the limit each (shrinking them)."""
        saved = current.limit
        current.limit = min(saved, limit) if saved > 0 else saved
        try:
            yield
        finally:
            current.limit = saved

    def _watch(self, main_ident: int | None) -> None:
        tick = min(0.1, self.limit / 4)
        seen: tuple[str, float] | None = None
        seen_at = monotonic()
        while not self._stop.wait(tick):
            op, since = current.op, current.since
            if op is None or main_ident is None:
                seen = None
                continue
            now = monotonic()
            if (op, since) != seen:  # a new call: its wall time starts now
                seen, seen_at = (op, since), now
            late = (process_time() - since > current.limit
                    or now - seen_at > current.limit * WALL_FACTOR)
            if late:
                signal.pthread_kill(main_ident, signal.SIGALRM)
                current.since = process_time()  # re-arm if the policy swallows it


def _raise_timeout(signum: int, frame: FrameType | None) -> None:
    if current.op is not None:
        current.expired += 1
        raise CallTimeout(current.op)
