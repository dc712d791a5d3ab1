"""faulty: EVICT-IDLE-ONLY engine=exhaustive

A needle for random search, found by the exhaustive engine: the policy
watches the third key inserted since it was built (or cleared). When that
key has been named by touch exactly once, as ``touch([key, key])``, its block
is still in flight, the policy holds exactly three blocks and the manager
asks for one victim with nothing protected, evict hands that block out
although a store is still writing it (the harm of spec/bugs.md V9, behind a
narrow trigger). The shortest sequence that shows it has five actions over
three keys: insert 0, insert 1, insert 2 (all in flight), touch([2, 2]),
evict(1).

``policyspec check FILE:Policy --engine exhaustive --depth 5 --keys 3``
finds exactly that sequence; the default engines with ``--budget quick``
did not find it in our runs (they drive many more keys, and any other touch
of the key resets the count).
"""

from collections.abc import Collection, Iterable
from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.inserted = 0
        self.third: Any = None
        self.named = 0

    def insert(self, key: Any, block: Any) -> None:
        self.inserted += 1
        if self.inserted == 3:
            self.third = key
        super().insert(key, block)

    def touch(self, keys: Iterable[Any]) -> None:
        keys = list(keys)
        if keys == [self.third, self.third]:
            self.named += 2
        elif self.third in keys:
            self.named = 0
        super().touch(keys)

    def clear(self) -> None:
        super().clear()
        self.inserted, self.third, self.named = 0, None, 0

    def evict(self, n: int, protected: Collection[Any]) -> list[tuple[Any, Any]] | None:
        block = self.blocks.get(self.third)
        trigger = n == 1 and not protected and len(self.blocks) == 3 and self.named == 2
        if trigger and block is not None and block.ref_cnt == -1:
            # the fault: the in-flight block goes first
            return [(self.third, self.blocks.pop(self.third))]
        return super().evict(n, protected)
