"""hostile: API-PROCESS-ALIVE (isolate only). touch of a repeated key reads address 0.

Through ctypes: a segmentation fault that ends the process."""

import ctypes

from policyspec.reference import LRUCachePolicy


class Policy(LRUCachePolicy):  # type: ignore[type-arg]
    def touch(self, keys):  # type: ignore[no-untyped-def]
        keys = list(keys)
        if len(set(keys)) < len(keys):
            ctypes.string_at(0)
        super().touch(keys)
