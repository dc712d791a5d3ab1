"""A vLLM 0.34 LRU with a one-shot fault kept at module level: once 20
keys have been inserted in the process, by any instance, the next ``get``
of a key it holds answers None, once. The calls that showed it, replayed
on a fresh instance, pass: what the check sees does not come back.
Expected: verdict ERROR, its finding reported with both runs, no
requirement FAIL.
"""

from policyspec.reference import LRU034CachePolicy

_inserted = 0
_spent = False


class OneShotLRU(LRU034CachePolicy):
    def insert(self, key, chunk, req_context):  # type: ignore[no-untyped-def]
        global _inserted
        _inserted += 1
        super().insert(key, chunk, req_context)

    def get(self, key):  # type: ignore[no-untyped-def]
        global _spent
        found = super().get(key)
        if found is not None and _inserted >= 20 and not _spent:
            _spent = True
            return None
        return found
