"""faulty: LRU033-CLEAR-RESET profile=lru-0.33 engine=request-memory

The request-ranked LRU keeping a request's rank across ``clear``: the rank
it stored in the request's context is reused whatever the cache generation.
After a reset the clock starts again, so a request still running from
before the reset ranks with the oldest new requests (or below them) instead
of getting a fresh rank. It needs a clear between two hook calls of one
request and a later eviction that tells the ranks apart: the
request-memory engine (request ids reused after a clear, a default engine
of lru-0.33) makes that within a second; the stateful engine may take
longer than a loaded machine gives it.
"""

from typing import Any

from policyspec.reference.lru033 import LRU033CachePolicy, RequestRank


class Policy(LRU033CachePolicy[Any, Any]):
    def request_rank(self, req_context: Any) -> int:
        state = req_context.get_state(RequestRank)
        if not isinstance(state, RequestRank) or state.owner is not self:
            # the fault: the generation is not compared
            state = RequestRank(self, self.generation, self._tick())
            req_context.set_state(state)
        return state.rank
