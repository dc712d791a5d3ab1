"""Hypothesis strategies for model values: keys, well-formed states, and the
quiescent states a manager leaves between two of its steps.

The model's tests and the fast oracle's draw single transitions from these
(tests only: no engine starts from an arbitrary state). Every
drawn state satisfies ``well_formed`` by construction (no filtering), so
generation stays fast and shrinks towards small, empty states.
"""

from __future__ import annotations

from hypothesis import strategies as st

from policyspec.model.state import IDLE, IN_FLIGHT, State

__all__ = [
    "DEFAULT_KEY_SPACE",
    "DEFAULT_MAX_REF",
    "key_lists",
    "keys",
    "protected_sets",
    "quiescent_states",
    "states",
]

DEFAULT_KEY_SPACE = 12
"""Keys are drawn from ``range(DEFAULT_KEY_SPACE)``: few enough that drawn
keys collide with present ones, more than a state holds, so absent keys exist."""
DEFAULT_MAX_REF = 3
"""Highest ref_cnt drawn: more concurrent reads add nothing the model sees."""


def keys(key_space: int = DEFAULT_KEY_SPACE) -> st.SearchStrategy[int]:
    """A model key: a small non-negative int below ``key_space``."""
    return st.integers(min_value=0, max_value=key_space - 1)


def key_lists(
    key_space: int = DEFAULT_KEY_SPACE, max_size: int = 6
) -> st.SearchStrategy[list[int]]:
    """Arguments for touch: any keys, repeats and absent ones included."""
    return st.lists(keys(key_space), max_size=max_size)


def protected_sets(
    key_space: int = DEFAULT_KEY_SPACE, max_size: int = 4
) -> st.SearchStrategy[frozenset[int]]:
    """Arguments for evict's ``protected``: any keys, absent ones included."""
    return st.frozensets(keys(key_space), max_size=max_size)


@st.composite
def _states(draw: st.DrawFn, max_keys: int, key_space: int, max_ref: int, quiescent: bool) -> State:
    # ref_cnt 0 is drawn about half the time: idle keys are what evict,
    # touch and mark_* act on, so states rich in them test more.
    ref_cnts = st.one_of(st.just(IDLE), st.integers(min_value=IN_FLIGHT, max_value=max_ref))
    refs = draw(st.dictionaries(keys(key_space), ref_cnts, max_size=max_keys))
    ready = [key for key, ref in refs.items() if ref == IDLE]
    order = draw(st.permutations(ready))
    if quiescent:
        idle = list(order)
    else:
        # A key at ref_cnt 0 that is not idle yet: the manager has written
        # the 0 but not yet called mark_evictable (or is about to raise it).
        marked = draw(st.lists(st.booleans(), min_size=len(order), max_size=len(order)))
        idle = [key for key, keep in zip(order, marked, strict=True) if keep]
    # Unbounded, or a cache_capacity the keys fit in (sometimes exactly, so
    # that a full cache, where insert is not allowed, comes up too).
    capacity = draw(st.none() | st.integers(min_value=len(refs), max_value=max(max_keys, 1)))
    return State(refs, idle, capacity)


def states(
    max_keys: int = 6,
    key_space: int = DEFAULT_KEY_SPACE,
    max_ref: int = DEFAULT_MAX_REF,
) -> st.SearchStrategy[State]:
    """Any well-formed state: ref counts in ``-1..max_ref``; the idle list an
    ordered subset of the keys at ref_cnt 0 (so it may miss some of them);
    capacity None or at least the number of keys."""
    if not 0 <= max_keys <= key_space:
        raise ValueError(f"need 0 <= max_keys <= key_space, got {max_keys}, {key_space}")
    return _states(max_keys, key_space, max_ref, quiescent=False)


def quiescent_states(
    max_keys: int = 6,
    key_space: int = DEFAULT_KEY_SPACE,
    max_ref: int = DEFAULT_MAX_REF,
) -> st.SearchStrategy[State]:
    """A well-formed state as the manager leaves it between two steps: a key
    is idle exactly when its ref_cnt is 0, in any order."""
    if not 0 <= max_keys <= key_space:
        raise ValueError(f"need 0 <= max_keys <= key_space, got {max_keys}, {key_space}")
    return _states(max_keys, key_space, max_ref, quiescent=True)
