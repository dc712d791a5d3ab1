"""The manager's second thread, for the engines that play it.

vLLM 0.33 calls a policy from two threads, one at a time under the
manager's lock (API-ANY-THREAD), so an engine hands some jobs to a second
thread and waits for it. One such thread serves the whole process, so that
thousands of examples leave no idle threads behind; a job that never
returns leaves it stuck in the policy, and the next job gets a fresh one.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["on_second_thread"]

T = TypeVar("T")


class _Thread:
    """One daemon thread running the jobs it is handed, one at a time."""

    def __init__(self) -> None:
        self.job: Callable[[], object] | None = None
        self.result: object = None
        self.error: BaseException | None = None
        self.start = threading.Event()
        self.done = threading.Event()
        threading.Thread(target=self._loop, daemon=True, name="policyspec-poll").start()

    def _loop(self) -> None:
        while True:
            self.start.wait()
            self.start.clear()
            job, self.job = self.job, None
            try:
                self.result, self.error = (job() if job is not None else None), None
            except BaseException as exc:  # handed to the waiting thread
                self.result, self.error = None, exc
            self.done.set()


_lock = threading.Lock()
_thread: _Thread | None = None


def on_second_thread(job: Callable[[], T]) -> T:
    """``job()``, run on the second thread while the caller waits; its
    exception is raised here. Callers from several threads take turns."""
    global _thread
    with _lock:
        worker = _thread
        if worker is None:
            worker = _thread = _Thread()
        worker.done.clear()
        worker.job = job
        worker.start.set()
        try:
            worker.done.wait()
        except BaseException:  # the watchdog ended the wait: the job is stuck
            _thread = None
            raise
        error, worker.error = worker.error, None
        result, worker.result = worker.result, None
    if error is not None:
        raise error
    return result  # type: ignore[return-value]  # what job() returned


def _forget_in_child() -> None:
    """A forked worker process has no copy of the parent's thread."""
    global _lock, _thread
    _lock, _thread = threading.Lock(), None


os.register_at_fork(after_in_child=_forget_in_child)
