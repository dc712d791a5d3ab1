"""What Hypothesis's draws depend on while an engine runs: the seed alone.

Hypothesis mixes into some draws constants read from every "local" module
loaded, and which modules are loaded depends on the front end, so the same
seed drew other examples in ``policyspec check`` than in pytest. While
``seed_alone`` is in force that set is empty, so every front end does the
same work for a seed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["seed_alone"]


@contextmanager
def seed_alone() -> Iterator[None]:
    """Run the body with Hypothesis's local constants empty, and put the
    scan back afterwards. ``CONSTANTS_CACHE`` holds constants filtered per
    strategy and is cleared on entry and exit, so nothing drawn before
    leaks in and nothing from inside leaks out. These are Hypothesis
    internals: if a release renames them, this does nothing and
    tests/test_determinism.py says so."""
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants

        scan = providers._get_local_constants
        cache = providers.CONSTANTS_CACHE
    except (ImportError, AttributeError):
        yield
        return
    none = Constants()
    providers._get_local_constants = lambda: none
    cache.cache.clear()
    try:
        yield
    finally:
        providers._get_local_constants = scan
        cache.cache.clear()
