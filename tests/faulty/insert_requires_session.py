"""faulty: API-NO-RAISE

Risk pattern 8 of spec/contract.md (asserting an external protocol in
``insert``): the policy wants a ``begin_session()`` call of its own fork's
protocol before any store, and asserts it. The seed manager knows nothing of
such a call, so the first store raises.
"""

from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.in_session = False

    def begin_session(self) -> None:
        self.in_session = True

    def insert(self, key: Any, block: Any) -> None:
        assert self.in_session, "insert outside a session"  # the fault
        super().insert(key, block)
