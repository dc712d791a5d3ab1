"""Whether a blame found by probing names the operation that runs the
mutated code.

An exact profile sees a wrong order only at an evict, and the report then
names the operation behind it (``witness.explain.culprit``): a diagnosis,
which no check of the named requirement confirms on replay. A mutant knows
where its fault is, so the benchmark can judge the diagnosis: it is right
when the policy method of the operation named is the mutated definition,
or calls it (through ``self``, at any depth). An operation named for a
fault in ``__init__`` or in ``evict`` is not.
"""

from __future__ import annotations

import ast

__all__ = ["BESIDE_CULPRITS", "OPERATIONS", "callers", "located", "operations_named"]

OPERATIONS = ("insert", "remove", "evict", "get", "touch", "clear", "mark_evictable",
              "mark_non_evictable", "on_store_miss", "on_request_access", "on_request_finished")
"""The policy calls a culprit can be named after."""


BESIDE_CULPRITS = {
    "ARC-EVICT-GHOSTS": ("evict",),
    "ARC-GHOST-ADAPT": ("touch",),
    "ARC-TOUCH-NOT-READY": ("touch",),
    "LRU033-CLEAR-RESET": ("clear", "insert", "on_request_access"),
}
"""Ids a diagnosis names beside the culprits, by the calls their spec text
is about (spec/arc.md, spec/lru033.md: after a clear, an insert or an
access must not reuse a request's rank taken before it, and the LRU
diagnosis names LRU033-CLEAR-RESET for that insert or access)."""


def operations_named(profile_name: str, requirement: str) -> frozenset[str]:
    """The policy calls whose culprit under ``profile_name`` is ``requirement``."""
    from policyspec.profiles import get_profile

    refinement = get_profile(profile_name).refinement
    if refinement is None:
        return frozenset()
    return frozenset(op for op in OPERATIONS if refinement.culprit(op) == requirement) | (
        frozenset(BESIDE_CULPRITS.get(requirement, ())))


def callers(source: str, definition: str) -> frozenset[str]:
    """``definition`` and every function of ``source`` that calls it, at any
    depth: methods through ``self.name`` (called or handed on), module
    functions by name."""
    calls: dict[str, set[str]] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            named = calls.setdefault(node.name, set())
            for inner in ast.walk(node):
                if (isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name)
                        and inner.value.id == "self"):
                    named.add(inner.attr)  # a call, or a method handed on (key=self.rank)
                elif isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name):
                    named.add(inner.func.id)
    found = {definition}
    grew = True
    while grew:
        grew = False
        for name, callees in calls.items():
            if name not in found and callees & found:
                found.add(name)
                grew = True
    return frozenset(found)


def located(source: str, definition: str, profile_name: str, requirement: str) -> bool:
    """Whether ``requirement``, named by probing, is the culprit of a call
    whose method runs the mutated ``definition``."""
    return bool(operations_named(profile_name, requirement) & callers(source, definition))
