"""hostile: API-ARGS-UNCHANGED. touch empties the caller's keys list while it runs.

(Only a list or a set: the other shapes the harness passes have no clear.)
"""

from policyspec.reference import LRUCachePolicy


class Policy(LRUCachePolicy):  # type: ignore[type-arg]
    def touch(self, keys):  # type: ignore[no-untyped-def]
        if isinstance(keys, list | set):
            super().touch(keys)
            keys.clear()
        else:
            super().touch(keys)
