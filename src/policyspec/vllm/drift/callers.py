"""Which CachePolicy methods vLLM's managers call, read with ``ast``: the
attribute ``CPUOffloadingManager`` annotates as its ``CachePolicy``
(``self._policy``), and every call on it (or on a local name bound to it)
in that class and in every class deriving from it anywhere in
``kv_offload/`` outside ``cpu/policies/`` (the tiering manager's
``CPUPrimaryTierOffloadingManager`` reaches the policy this way). Another
class's attribute of the same name (the tiering backpressure policy) is not
the CachePolicy.
"""

from __future__ import annotations

import ast

from policyspec.vllm.drift.origins import VllmFiles

__all__ = ["manager_calls", "names_in"]

_POLICIES = "cpu/policies"
_MANAGER = "cpu/manager.py"


def names_in(module: ast.Module) -> set[str]:
    """Every name, attribute and imported name ``module`` mentions."""
    found: set[str] = set()
    for node in ast.walk(module):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.alias):
            found.add(node.asname or node.name)
    return found


def manager_calls(files: VllmFiles) -> tuple[str, dict[str, tuple[str, ...]]]:
    """(``Class.attribute`` holding the CachePolicy, {method: files calling
    it}) over the manager class and every class deriving from it anywhere in
    kv_offload outside ``cpu/policies/``."""
    owner = _policy_owner(files.parse(_MANAGER))
    if owner is None:
        return "", {}
    owner_class, attribute = owner
    classes: list[tuple[str, ast.ClassDef]] = []
    for path in files.under(""):
        if path.startswith(f"{_POLICIES}/"):
            continue
        module = files.parse(path)
        classes += [(path, n) for n in ast.walk(module) if isinstance(n, ast.ClassDef)]
    managers = {owner_class}
    grew = True
    while grew:
        grew = False
        for _, cls in classes:
            if cls.name not in managers and _base_names(cls) & managers:
                managers.add(cls.name)
                grew = True
    calls: dict[str, set[str]] = {}
    for path, cls in classes:
        if cls.name in managers:
            for method in _policy_methods(cls, attribute):
                calls.setdefault(method, set()).add(path)
    return f"{owner_class}.{attribute}", {m: tuple(sorted(f)) for m, f in calls.items()}


def _policy_owner(module: ast.Module) -> tuple[str, str] | None:
    """The class that stores ``self.<attribute>: CachePolicy = ...``."""
    for cls in (n for n in module.body if isinstance(n, ast.ClassDef)):
        for node in ast.walk(cls):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Attribute)
                and isinstance(node.target.value, ast.Name)
                and node.target.value.id == "self"
                and "CachePolicy" in names_in(ast.Module([ast.Expr(node.annotation)], []))
            ):
                return cls.name, node.target.attr
    return None


def _base_names(cls: ast.ClassDef) -> set[str]:
    names: set[str] = set()
    for base in cls.bases:
        if isinstance(base, ast.Name):
            names.add(base.id)
        elif isinstance(base, ast.Attribute):
            names.add(base.attr)
    return names


def _policy_methods(cls: ast.ClassDef, attribute: str) -> set[str]:
    """Methods called on ``self.<attribute>`` (or a local name bound to it)."""

    def is_policy(node: ast.expr, aliases: set[str]) -> bool:
        if isinstance(node, ast.Name):
            return node.id in aliases
        return (
            isinstance(node, ast.Attribute)
            and node.attr == attribute
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        )

    found: set[str] = set()
    for function in ast.walk(cls):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        aliases: set[str] = set()
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and is_policy(node.value, set()):
                aliases |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        for node in ast.walk(function):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and is_policy(node.func.value, aliases)
            ):
                found.add(node.func.attr)
    return found
