"""hostile: TOUCH-TOTAL. touch calls sys.exit when it sees a repeated key."""

import sys

from policyspec.reference import LRUCachePolicy


class Policy(LRUCachePolicy):  # type: ignore[type-arg]
    def touch(self, keys):  # type: ignore[no-untyped-def]
        keys = list(keys)
        if len(set(keys)) < len(keys):
            sys.exit(3)
        super().touch(keys)
