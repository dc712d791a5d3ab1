"""correct: core=pass lru=pass

A correct LRU that imports from vLLM inside a method, as some policies do
to keep module import cheap: ``touch`` builds its keys' group indexes with
``vllm.v1.kv_offload.base``. On a machine without vLLM the stand-ins must be
in place for the whole run, not only while the file is loaded, and every
front end (``policyspec check``, ``pytest --policy``, ``ConformanceSuite``)
must say so alike.
"""

from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    def touch(self, keys: Any) -> None:
        from vllm.v1.kv_offload.base import get_offload_group_idx

        keys = list(keys)  # walked twice: a generator gives its keys once
        self.groups_seen = {get_offload_group_idx(key) for key in keys}
        super().touch(keys)
