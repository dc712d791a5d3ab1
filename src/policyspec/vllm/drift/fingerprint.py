"""What policyspec depends on in a vLLM, read with ``ast`` from its files:
the *fingerprint* ``policyspec drift`` compares with the revisions it knows
(spec/drift.md, "What is compared"). It holds facts only, never code, so
no line of vLLM runs; a default that calls another method is part of the
contract and is recorded with its calls.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from policyspec.vllm.drift.callers import manager_calls, names_in
from policyspec.vllm.drift.origins import VllmFiles

__all__ = ["SCHEMA", "Fingerprint", "Helper", "Member", "read_fingerprint", "signature"]

SCHEMA = "policyspec-vllm-fingerprint/1"

_POLICIES = "cpu/policies"
_BASE = "cpu/policies/base.py"
_CONTEXT = "base.py"


@dataclass(frozen=True)
class Member:
    """One member of a class. ``kind``: ``abstract method``, ``method`` (on
    CachePolicy: a default), ``property``, ``abstract property``,
    ``classmethod``, ``staticmethod``, ``field`` or ``attribute``."""

    kind: str
    params: tuple[str, ...] = ()
    """The parameter list as written, one token each (``self``, ``n``,
    ``req_context=None``, ``*``, ``/``, ``*args``, ``**kwargs``)."""
    calls: tuple[str, ...] = ()
    """``self.<method>`` and module helpers the body calls, sorted; a call in
    a loop says over what (``self.touch for each of key_groups``)."""
    detail: str = ""
    """A field's type (and default); decorators the kind does not name."""

    @property
    def is_function(self) -> bool:
        return self.kind not in ("field", "attribute")


@dataclass(frozen=True)
class Helper:
    """A public module function of ``cpu/policies/base.py``."""

    params: tuple[str, ...]
    used_by: tuple[str, ...]
    """The in-tree policy modules (``cpu/policies/*.py``) that name it."""


@dataclass(frozen=True)
class Fingerprint:
    vllm: str
    """The version the vLLM said it was (not compared)."""
    cache_policy: dict[str, Member] | None
    helpers: dict[str, Helper]
    chunk_status: dict[str, Member] | None
    req_context: dict[str, Member] | None
    policy_attribute: str
    """``Class.attribute`` of the manager's CachePolicy (``""``: none found)."""
    manager_calls: dict[str, tuple[str, ...]]
    """Each policy method the managers call, with the files that call it."""
    revision: str = ""
    """For a stored fingerprint: the API revision it is (not compared)."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"schema": SCHEMA}
        if self.revision:
            data["revision"] = self.revision
        data["vllm"] = self.vllm
        data["cache_policy"] = _members_json(self.cache_policy)
        data["helpers"] = {
            name: {"params": list(h.params), "used_by": list(h.used_by)}
            for name, h in sorted(self.helpers.items())
        }
        data["chunk_status"] = _members_json(self.chunk_status)
        data["req_context"] = _members_json(self.req_context)
        data["policy_attribute"] = self.policy_attribute
        data["manager_calls"] = {m: list(f) for m, f in sorted(self.manager_calls.items())}
        return data

    @classmethod
    def from_json(cls, data: Any) -> Fingerprint:
        """Read back ``to_json``; ValueError when it is not one."""
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise ValueError(f"not a {SCHEMA} document")
        try:
            return cls(
                vllm=str(data["vllm"]),
                cache_policy=_members_from(data["cache_policy"]),
                helpers={
                    str(n): Helper(tuple(h["params"]), tuple(h["used_by"]))
                    for n, h in data["helpers"].items()
                },
                chunk_status=_members_from(data["chunk_status"]),
                req_context=_members_from(data["req_context"]),
                policy_attribute=str(data["policy_attribute"]),
                manager_calls={str(m): tuple(f) for m, f in data["manager_calls"].items()},
                revision=str(data.get("revision", "")),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"malformed fingerprint ({type(exc).__name__}: {exc})") from None


def _members_json(members: dict[str, Member] | None) -> dict[str, Any] | None:
    if members is None:
        return None
    out: dict[str, Any] = {}
    for name, m in sorted(members.items()):
        entry: dict[str, Any] = {"kind": m.kind}
        if m.is_function:
            entry["params"] = list(m.params)
        if m.calls:
            entry["calls"] = list(m.calls)
        if m.detail:
            entry["detail"] = m.detail
        out[name] = entry
    return out


def _members_from(data: Any) -> dict[str, Member] | None:
    if data is None:
        return None
    return {
        str(name): Member(
            kind=str(m["kind"]),
            params=tuple(str(p) for p in m.get("params", ())),
            calls=tuple(str(c) for c in m.get("calls", ())),
            detail=str(m.get("detail", "")),
        )
        for name, m in data.items()
    }


def signature(params: tuple[str, ...]) -> str:
    return f"({', '.join(params)})"


# -- reading ---------------------------------------------------------------


def read_fingerprint(files: VllmFiles) -> Fingerprint:
    """The fingerprint of the vLLM in ``files``; UnreadableError (from
    ``files``) when a file it needs is missing or does not parse."""
    base = files.parse(_BASE)
    context = files.parse(_CONTEXT)
    helpers = _helpers(files, base)
    policy = _class(base, "CachePolicy")
    chunk = _class(base, "ChunkStatus")
    req = _class(context, "ReqContext")
    attribute, calls = manager_calls(files)
    return Fingerprint(
        vllm=files.version,
        cache_policy=None if policy is None else _members(policy, set(helpers)),
        helpers=helpers,
        chunk_status=None if chunk is None else _members(chunk, set()),
        req_context=None if req is None else _members(req, set(), public_only=True),
        policy_attribute=attribute,
        manager_calls=calls,
    )


def _class(module: ast.Module, name: str) -> ast.ClassDef | None:
    return next(
        (n for n in module.body if isinstance(n, ast.ClassDef) and n.name == name), None
    )


def _helpers(files: VllmFiles, base: ast.Module) -> dict[str, Helper]:
    names = [
        n for n in base.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and not n.name.startswith("_")
    ]
    users: dict[str, list[str]] = {n.name: [] for n in names}
    for path in files.under(_POLICIES):
        if path == _BASE:
            continue
        used = names_in(files.parse(path))
        for name, found in users.items():
            if name in used:
                found.append(path.rpartition("/")[2])
    return {
        n.name: Helper(_params(n.args), tuple(sorted(users[n.name]))) for n in names
    }


def _members(
    cls: ast.ClassDef, helpers: set[str], *, public_only: bool = False
) -> dict[str, Member]:
    out: dict[str, Member] = {}
    for node in cls.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if _hidden(node.name, public_only):
                continue
            kind, detail = _function_kind(node)
            out[node.name] = Member(kind, _params(node.args), _calls(node, helpers), detail)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            name = node.target.id
            annotation = ast.unparse(node.annotation)
            if _hidden(name, True) or annotation.startswith(("ClassVar", "typing.ClassVar")):
                continue
            default = "" if node.value is None else f" = {_default(node.value)}"
            out[name] = Member("field", detail=f"{annotation}{default}")
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if not isinstance(target, ast.Name):
                    continue
                if target.id == "_fields_":
                    out.update(_ctypes_fields(node.value))
                elif not _hidden(target.id, True):
                    out[target.id] = Member("attribute")
    return out


def _hidden(name: str, public_only: bool) -> bool:
    """Private names and dunders are not part of the fingerprint, except
    ``__init__`` where the class writes one (vLLM builds a policy and a
    ChunkStatus through it)."""
    if name == "__init__":
        return public_only
    return name.startswith("_")


def _default(value: ast.expr) -> str:
    """A dataclass field's default: the expression, or what ``field()`` gives."""
    if (
        isinstance(value, ast.Call)
        and ast.unparse(value.func) in ("field", "dataclasses.field")
    ):
        for keyword in value.keywords:
            if keyword.arg == "default":
                return ast.unparse(keyword.value)
            if keyword.arg == "default_factory":
                return f"{ast.unparse(keyword.value)}()"
        return "field()"
    return ast.unparse(value)


def _ctypes_fields(value: ast.expr) -> Iterator[tuple[str, Member]]:
    """``_fields_ = [("ref_cnt", ctypes.c_int32), ...]`` as fields with their
    ctypes type."""
    if not isinstance(value, ast.List | ast.Tuple):
        return
    for item in value.elts:
        if (
            isinstance(item, ast.Tuple)
            and len(item.elts) >= 2
            and isinstance(item.elts[0], ast.Constant)
            and isinstance(item.elts[0].value, str)
        ):
            kind = ast.unparse(item.elts[1]).removeprefix("ctypes.")
            yield item.elts[0].value, Member("field", detail=kind)


_KINDS = {"property": "property", "classmethod": "classmethod", "staticmethod": "staticmethod"}
_IGNORED = {"override", "typing.override", "typing_extensions.override"}
"""Decorators that only mark a method for type checkers."""


def _function_kind(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, str]:
    abstract = False
    kind = "method"
    others: list[str] = []
    for decorator in node.decorator_list:
        text = ast.unparse(decorator)
        short = text.rpartition(".")[2]
        if short == "abstractmethod":
            abstract = True
        elif short in _KINDS and text in (short, f"builtins.{short}"):
            kind = _KINDS[short]
        elif text not in _IGNORED:
            others.append(f"@{text}")
    if abstract:
        kind = f"abstract {kind}"
    return kind, " ".join(others)


def _params(args: ast.arguments) -> tuple[str, ...]:
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    defaults += list(args.defaults)
    tokens: list[str] = []
    for index, (arg, default) in enumerate(zip(positional, defaults, strict=True)):
        tokens.append(arg.arg if default is None else f"{arg.arg}={ast.unparse(default)}")
        if args.posonlyargs and index == len(args.posonlyargs) - 1:
            tokens.append("/")
    if args.vararg is not None:
        tokens.append(f"*{args.vararg.arg}")
    elif args.kwonlyargs:
        tokens.append("*")
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        tokens.append(arg.arg if kw_default is None else f"{arg.arg}={ast.unparse(kw_default)}")
    if args.kwarg is not None:
        tokens.append(f"**{args.kwarg.arg}")
    return tuple(tokens)


def _calls(node: ast.FunctionDef | ast.AsyncFunctionDef, helpers: set[str]) -> tuple[str, ...]:
    """The ``self.<name>(...)`` and helper calls in the body, each with the
    loop it is in."""
    found: set[str] = set()

    def visit(item: ast.AST, loop: str) -> None:
        if isinstance(item, ast.For | ast.AsyncFor):
            visit(item.iter, loop)
            body: list[ast.AST] = [*item.body, *item.orelse]
            for child in body:
                visit(child, f" for each of {ast.unparse(item.iter)}")
            return
        if isinstance(item, ast.While):
            repeated: list[ast.AST] = [item.test, *item.body, *item.orelse]
            for child in repeated:
                visit(child, " in a while loop")
            return
        if isinstance(item, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            inner = f" for each of {ast.unparse(item.generators[-1].iter)}"
            for generator in item.generators:
                visit(generator.iter, loop)
                for condition in generator.ifs:
                    visit(condition, inner)
            made: list[ast.AST] = (
                [item.key, item.value] if isinstance(item, ast.DictComp) else [item.elt]
            )
            for child in made:
                visit(child, inner)
            return
        if isinstance(item, ast.Call):
            callee = item.func
            if (
                isinstance(callee, ast.Attribute)
                and isinstance(callee.value, ast.Name)
                and callee.value.id == "self"
            ):
                found.add(f"self.{callee.attr}{loop}")
            elif isinstance(callee, ast.Name) and callee.id in helpers:
                found.add(f"{callee.id}{loop}")
        for child in ast.iter_child_nodes(item):
            visit(child, loop)

    for statement in node.body:
        visit(statement, "")
    return tuple(sorted(found))
