"""Reading the call in a CrossHair counterexample back as Python values.

CrossHair reports ``... when calling f(2, [1], 3, [0, 1])``: the arguments
are printed with ``repr``, so for the plain data ``prove`` uses they are
literals, plus the model's own dataclasses (``State(...)``,
``ArcState(...)``) and ``set()``/``frozenset(...)``. ``parse_call`` reads
them without ``eval``: only literals and calls to those names are accepted.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["CallText", "parse_call"]

CallText = tuple[str, tuple[Any, ...], dict[str, Any]]
"""Function name, positional arguments, keyword arguments."""


def _call_span(text: str) -> str:
    """The ``f(...)`` after ``when calling``, up to its matching parenthesis."""
    start = text.index(" when calling ") + len(" when calling ")
    depth = 0
    quote: str | None = None
    for index in range(start, len(text)):
        char = text[index]
        if quote:
            if char == quote and text[index - 1] != "\\":
                quote = None
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return text[start : index + 1]
    raise ValueError(f"unbalanced call in {text!r}")


def parse_call(text: str, constructors: Mapping[str, Callable[..., Any]]) -> CallText:
    """The call of a CrossHair counterexample message. ``constructors``
    names the classes that may appear in argument reprs. ValueError when
    the text holds something else."""
    node = ast.parse(_call_span(text), mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a call: {text!r}")
    allowed: dict[str, Callable[..., Any]] = {"set": set, "frozenset": frozenset, **constructors}
    args = tuple(_value(arg, allowed) for arg in node.args)
    kwargs = {kw.arg: _value(kw.value, allowed) for kw in node.keywords if kw.arg}
    return node.func.id, args, kwargs


def _value(node: ast.expr, allowed: Mapping[str, Callable[..., Any]]) -> Any:
    if isinstance(node, ast.Call):
        make = allowed.get(node.func.id) if isinstance(node.func, ast.Name) else None
        if make is None:
            raise ValueError(f"unexpected call {ast.unparse(node)} in a counterexample")
        args = [_value(arg, allowed) for arg in node.args]
        kwargs = {kw.arg: _value(kw.value, allowed) for kw in node.keywords if kw.arg}
        return make(*args, **kwargs)
    if isinstance(node, ast.List):
        return [_value(item, allowed) for item in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_value(item, allowed) for item in node.elts)
    if isinstance(node, ast.Set):
        return {_value(item, allowed) for item in node.elts}
    if isinstance(node, ast.Dict):
        return {
            _value(key, allowed): _value(value, allowed)
            for key, value in zip(node.keys, node.values, strict=True)
            if key is not None
        }
    return ast.literal_eval(node)
