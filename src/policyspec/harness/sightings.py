"""When each failure was first seen: seconds from the start of the run and
calls made until then (``found_after_s``, ``found_after_calls`` in the
report). Shrinking comes after; what a user waits for is first the fault
being seen, then the trace being short. The same recorder carries the run's
``--fail-fast`` signal: engines ask ``stopped()`` between examples.

One ``Sightings`` per run (and per worker process), made current by
``session.run_check`` with ``in_run``; the harness and the engines that do
not use it record into ``current()``: no parameter through every engine, no
global that outlives the run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from time import monotonic

__all__ = ["Sightings", "current", "in_run"]


class Sightings:
    """First sightings of the requirements of one run."""

    def __init__(
        self, started: float, calls: int = 0, stop: Callable[[], bool] | None = None
    ) -> None:
        self.started = started
        """``time.monotonic()`` when the run started (the same clock in
        every worker process of the run)."""
        self.calls = calls
        """Policy calls made so far by finished examples of every engine;
        an engine adds its examples' calls as they end."""
        self.first: dict[str, tuple[float, int]] = {}
        self._stop = stop

    def stopped(self) -> bool:
        """True once the run was told to stop (``--fail-fast`` after a MUST
        failure): an engine then ends at its next example."""
        return self._stop is not None and self._stop()

    def saw(self, requirement: str, calls_in_example: int = 0) -> None:
        """``requirement`` failed now, ``calls_in_example`` calls into the
        current example."""
        if requirement not in self.first:
            self.first[requirement] = (monotonic() - self.started,
                                       self.calls + calls_in_example)


class _Unrecorded(Sightings):
    """Outside a run nobody reads the sightings: nothing is recorded and no
    clock is read (under CrossHair, ``prove``'s call sequences, every
    ``monotonic()`` is a symbolic value whose paths cost the search)."""

    def saw(self, requirement: str, calls_in_example: int = 0) -> None:
        return None

    @property
    def calls(self) -> int:
        return 0

    @calls.setter
    def calls(self, value: int) -> None:
        return None


_UNRECORDED = _Unrecorded(0.0)
_CURRENT: ContextVar[Sightings | None] = ContextVar("policyspec_sightings", default=None)


def current() -> Sightings:
    """The run's recorder, or one that records nothing outside a run."""
    found = _CURRENT.get()
    return found if found is not None else _UNRECORDED


@contextmanager
def in_run(sightings: Sightings) -> Iterator[Sightings]:
    token = _CURRENT.set(sightings)
    try:
        yield sightings
    finally:
        _CURRENT.reset(token)
