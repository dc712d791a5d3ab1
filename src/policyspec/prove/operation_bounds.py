"""Which operations ``prove`` checks for a policy, and the bounds of each.

The operations are those the manager of the policy's API revision calls
(``policyspec.protocols.REVISIONS``: vLLM 0.33 adds the request hooks, a
revision without ``touch`` never gets one), each one the policy's
capabilities allow (``Subject.has``: ``clear``, ``mark``, ``hooks``, and any
capability named after the operation itself, such as ``touch``, once the
subject model knows it). Nothing here names a revision.
"""

from __future__ import annotations

from policyspec.model.request import HOOKS
from policyspec.protocols import REVISIONS
from policyspec.prove.canonical import (
    MAX_HOOK_LIST,
    MAX_KEYS,
    MAX_LIST,
    MAX_REF,
    OPERATIONS,
    SEED_OPERATIONS,
)
from policyspec.subject import KNOWN_CAPABILITIES, Subject

__all__ = ["STATE_BOUND", "bound_of", "operations_of"]

_NEEDS = {
    "clear": "clear",
    "mark_evictable": "mark",
    "mark_non_evictable": "mark",
    **{hook: "hooks" for hook in HOOKS},
}
"""The capability each optional operation needs (besides being called by
the revision's manager)."""

STATE_BOUND = (
    f"pre-states the manager can leave: at most {MAX_KEYS} keys, each in flight (-1), "
    f"idle (0) or being read ({MAX_REF}), in any idle order, capacity from the keys "
    f"present to {MAX_KEYS + 1}; keys named canonically (policyspec.prove.canonical)"
)

_PAST = "; the absent key stored and evicted before, or never"
_ARGUMENTS = {
    "get": "any key, present or absent" + _PAST,
    "insert": "the absent key, in flight or idle" + _PAST,
    "remove": "any present key",
    "touch": f"lists of up to {MAX_LIST} keys, present or absent, repeats and order included"
             + _PAST,
    "mark_evictable": "the key whose load ends",
    "mark_non_evictable": "any idle key",
    "evict": "n from 0 to the keys present + 1, every protected set of keys present and "
             "absent",
    "clear": "no arguments",
    "on_store_miss": "the absent key, of a fresh request, placed by the scheduler or not"
                     + _PAST,
    "on_request_access": f"distinct keys (up to {MAX_HOOK_LIST}), present or absent, of a "
                         "fresh request, placed or not" + _PAST,
    "on_request_finished": f"one group of distinct keys (up to {MAX_HOOK_LIST}), each "
                           "insertion-only, reused or neither, of a fresh request, placed or "
                           "not",
}


def operations_of(subject: Subject, *, hooks: bool = True) -> tuple[str, ...]:
    """The operations to check for ``subject``, in spec order: those its
    revision's manager calls that its capabilities allow. ``hooks=False``
    leaves out the request hooks (a hand-written pair cannot build a
    request's state)."""
    revision = REVISIONS.get(subject.api)
    called = {m.name for m in revision.methods} if revision is not None else set(SEED_OPERATIONS)
    found = []
    for op in OPERATIONS:
        if op not in called or (op in HOOKS and not hooks):
            continue
        needs = [_NEEDS.get(op), op]
        if any(n is not None and n in KNOWN_CAPABILITIES and not subject.has(n) for n in needs):
            continue
        found.append(op)
    return tuple(found)


def bound_of(op: str) -> str:
    """The arguments ``op``'s obligation covers, in words."""
    return _ARGUMENTS[op]
