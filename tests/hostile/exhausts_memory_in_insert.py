"""hostile: API-PROCESS-ALIVE (isolate only). insert of an idle block grabs memory without bound."""

from policyspec.reference import LRUCachePolicy


class Policy(LRUCachePolicy):  # type: ignore[type-arg]
    def insert(self, key, block):  # type: ignore[no-untyped-def]
        if block.ref_cnt == 0:
            hoard = []
            while True:
                hoard.append(bytearray(64 << 20))
        super().insert(key, block)
