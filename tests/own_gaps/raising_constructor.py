"""LRUs whose constructor raises when vLLM builds them as
Class(cache_capacity=N): a check of them cannot start."""

from collections import OrderedDict


class _LRU:
    def get(self, key):
        return self.blocks.get(key)

    def insert(self, key, block):
        self.blocks[key] = block

    def remove(self, key):
        del self.blocks[key]

    def touch(self, keys):
        for key in reversed(list(keys)):
            if key in self.blocks:
                self.blocks.move_to_end(key)

    def evict(self, n, protected):
        ready = [(k, b) for k, b in self.blocks.items() if b.ref_cnt == 0 and k not in protected]
        if len(ready) < n:
            return None
        for key, _ in ready[:n]:
            del self.blocks[key]
        return ready[:n]

    def clear(self):
        self.blocks.clear()


def _read_settings(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


class SettingsLRU(_LRU):
    """Reads a settings file that is not there: OSError, two frames deep."""

    def __init__(self, cache_capacity: int):
        self.settings = _read_settings("/nonexistent/policyspec-lru.conf")
        self.blocks = OrderedDict()


class ValueLRU(_LRU):
    """Refuses every capacity that is not a multiple of 1000."""

    def __init__(self, cache_capacity: int):
        if cache_capacity % 1000:
            raise ValueError(f"cache_capacity must be a multiple of 1000, not {cache_capacity}")
        self.blocks = OrderedDict()


class TypeErrorLRU(_LRU):
    """A TypeError inside the body (not a wrong call): still the constructor's."""

    def __init__(self, cache_capacity: int):
        self.blocks = OrderedDict()
        self.limit = cache_capacity + "blocks"


class ExitLRU(_LRU):
    def __init__(self, cache_capacity: int):
        raise SystemExit("no GPU")
