"""faulty: API-CLOCK-STEP-BACK engine=fast

A session-TTL design: each key expires ``TTL`` seconds after its store or
last touch, measured on the wall clock (``time.time()``); ``evict`` takes
expired idle keys first (oldest first), then the least recently used ones.
It is correct while the wall clock only goes forward, but it checks its own
arithmetic: an age below zero raises ValueError("clock went backwards"),
which in a serving process happens the day NTP steps the clock back. The
engines step the wall clock back now and then (policyspec.environment); the
failing evict is then API-NO-RAISE only because of the step back, which
is API-CLOCK-STEP-BACK (a SHOULD: the fix is ``time.monotonic()``).
"""

import time
from collections import OrderedDict
from collections.abc import Collection, Iterable
from typing import Any

TTL = 30.0


class Policy:
    def __init__(self, cache_capacity: int) -> None:
        self.blocks: dict[Any, Any] = {}
        self.idle: OrderedDict[Any, None] = OrderedDict()
        self.stamp: dict[Any, float] = {}

    def get(self, key: Any) -> Any:
        return self.blocks.get(key)

    def insert(self, key: Any, block: Any) -> None:
        self.blocks[key] = block
        self.stamp[key] = time.time()
        if block.ref_cnt == 0:
            self.idle[key] = None

    def remove(self, key: Any) -> None:
        del self.blocks[key], self.stamp[key]
        self.idle.pop(key, None)

    def mark_evictable(self, key: Any) -> None:
        self.idle[key] = None

    def mark_non_evictable(self, key: Any) -> None:
        self.idle.pop(key, None)

    def touch(self, keys: Iterable[Any]) -> None:
        now = time.time()
        for key in reversed(list(keys)):
            if key in self.blocks:
                self.stamp[key] = now
                if key in self.idle:
                    self.idle.move_to_end(key)

    def _age(self, key: Any, now: float) -> float:
        age = now - self.stamp[key]
        if age < 0:
            raise ValueError("clock went backwards")  # the fault
        return age

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        if n == 0:
            return []
        eligible = [k for k in self.idle if k not in protected]
        if len(eligible) < n:
            return None
        now = time.time()
        expired = [k for k in eligible if self._age(k, now) > TTL]
        victims = (expired + [k for k in eligible if k not in set(expired)])[:n]
        for key in victims:
            del self.idle[key]
        return [(key, self.blocks.pop(key)) for key in victims]

    def clear(self) -> None:
        self.blocks.clear()
        self.idle.clear()
        self.stamp.clear()
