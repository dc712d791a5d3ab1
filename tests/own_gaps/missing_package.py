"""A policy whose file imports a package that is not installed."""

import numpy_foo_policyspec_absent  # noqa: F401


class NeedsPackage:
    def __init__(self, cache_capacity: int):
        self.cache_capacity = cache_capacity
