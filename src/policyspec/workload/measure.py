"""What ``policyspec simulate`` measures of a policy besides its hits: the
time of each call and the memory the policy holds (spec/traffic.md,
"Simulate"). Calls are timed with ``time.perf_counter_ns``, which is far
cheaper per reading than a CPU-time clock and equal to it for calls of
microseconds; times go into histograms of constant size, so a trace of any
length is measured in constant memory.
"""

from __future__ import annotations

import gc
import sys
import types
from collections.abc import Callable, Iterable
from time import perf_counter_ns
from typing import Any

from policyspec.vllm.standins.keys import ReqContext
from policyspec.vllm.standins.policies import ChunkStatus

__all__ = ["OPS", "Histogram", "TimedPolicy", "owned_bytes"]

OPS = (
    "get", "insert", "remove", "touch", "evict", "clear", "mark_evictable",
    "mark_non_evictable", "on_store_miss", "on_request_access", "on_request_finished",
)
"""The policy methods vLLM 0.33's manager calls."""

_STEPS = 16
"""Buckets per doubling: a quantile is known to within 2**(1/16), 4.4%."""


class Histogram:
    """Counts of durations (ns) in logarithmic buckets."""

    __slots__ = ("buckets", "count", "total")

    def __init__(self) -> None:
        self.buckets = [0] * (64 * _STEPS)
        self.count = 0
        self.total = 0

    def add(self, ns: int) -> None:
        self.count += 1
        self.total += ns
        if ns < _STEPS * 2:
            self.buckets[max(ns, 0)] += 1
            return
        bits = ns.bit_length()
        self.buckets[bits * _STEPS + ((ns >> (bits - 5)) & (_STEPS - 1))] += 1

    def merge(self, other: Histogram) -> None:
        self.count += other.count
        self.total += other.total
        self.buckets = [a + b for a, b in zip(self.buckets, other.buckets, strict=True)]

    @staticmethod
    def _upper(index: int) -> int:
        """The largest duration of bucket ``index``."""
        if index < _STEPS * 2:
            return index
        bits, step = divmod(index, _STEPS)
        return (((_STEPS + step + 1) << (bits - 5)) - 1)

    def quantile(self, q: float) -> int:
        """The duration below which a fraction ``q`` of the calls took (the
        upper end of its bucket); 0 when nothing was counted."""
        if not self.count:
            return 0
        rank = max(1, int(q * self.count + 0.999_999))
        seen = 0
        for index, n in enumerate(self.buckets):
            seen += n
            if seen >= rank:
                return self._upper(index)
        return self._upper(len(self.buckets) - 1)


class TimedPolicy:
    """The policy behind a clock (spec/traffic.md, "Simulate"): one ``Histogram`` per method
    the manager calls, and the evictions the policy refused. ``hooks``: the
    observation hooks a later release's manager also calls
    (``protocols.observation_hooks``)."""

    def __init__(self, policy: Any, hooks: Iterable[str] = ()) -> None:
        self.policy = policy
        self.histograms: dict[str, Histogram] = {}
        self.failed_evictions = 0
        for name in (*OPS, *hooks):
            method = getattr(policy, name, None)
            if method is not None:
                setattr(self, name, self._timed(name, method))

    def _timed(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        histogram = self.histograms[name] = Histogram()
        add = histogram.add
        clock = perf_counter_ns
        if name == "evict":
            def evict(*args: Any) -> Any:
                start = clock()
                result = method(*args)
                add(clock() - start)
                if result is None:
                    self.failed_evictions += 1
                return result
            return evict

        def call(*args: Any) -> Any:
            start = clock()
            result = method(*args)
            add(clock() - start)
            return result
        return call

    def total(self) -> Histogram:
        """Every call's time together."""
        out = Histogram()
        for histogram in self.histograms.values():
            out.merge(histogram)
        return out


_NOT_OWNED = (
    type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.CodeType,
    types.MethodType, bytes, ChunkStatus, ReqContext,
)
"""What a policy refers to but does not own: code, classes, and what the
manager hands it (keys, chunks, request contexts)."""


def owned_bytes(policy: object, not_owned: tuple[type, ...] = ()) -> int:
    """The size (``sys.getsizeof``) of every object reachable from
    ``policy`` (through ``gc.get_referents``) except what it does not own
    (``_NOT_OWNED`` and ``not_owned``: vLLM's own chunk and context types
    when vLLM is installed). Bound methods are followed to their object
    only through it, so a wrapper's methods are not counted twice."""
    skip = _NOT_OWNED + not_owned
    seen: set[int] = set()
    stack: list[object] = [policy]
    total = 0
    while stack:
        obj = stack.pop()
        key = id(obj)
        if key in seen:
            continue
        seen.add(key)
        if isinstance(obj, skip):
            if isinstance(obj, types.MethodType):
                stack.append(obj.__self__)
            continue
        total += sys.getsizeof(obj)
        stack.extend(gc.get_referents(obj))
    return total
