"""Targets: parse ``pkg.module:Class`` / ``path/to/file.py:Class``, import
the module, find the class, and turn every way that can fail into one
``TargetError`` line (with the policy file's own ``file:line`` for errors
raised while importing it, never a checker traceback).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import itertools
import os
import re
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, TracebackType

from policyspec.adapters.errors import TargetError

__all__ = [
    "Target",
    "import_target",
    "package_root",
    "parse_target",
    "resolve_class",
    "where_raised",
]

_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_FORM = "expected 'package.module:Class' or 'path/to/file.py:Class'"
_counter = itertools.count()


@dataclass(frozen=True)
class Target:
    text: str
    location: str
    """A file path or a dotted module name."""
    attr: str
    is_file: bool


def parse_target(text: str) -> Target:
    """Split and validate a target string."""
    location, sep, attr = text.rpartition(":")
    if not sep or not location or not attr:
        raise TargetError(f"malformed target {text!r}: {_FORM}")
    if not _DOTTED.match(attr):
        raise TargetError(f"malformed target {text!r}: {attr!r} is not a class name; {_FORM}")
    is_file = location.endswith(".py") or "/" in location or os.sep in location
    if not is_file and not _DOTTED.match(location):
        raise TargetError(
            f"malformed target {text!r}: {location!r} is neither a module name nor a .py path; "
            f"{_FORM}"
        )
    return Target(text, location, attr, is_file)


@contextmanager
def _on_path(entry: str) -> Iterator[None]:
    added = entry not in sys.path
    if added:
        sys.path.insert(0, entry)
    try:
        yield
    finally:
        if added and entry in sys.path:
            sys.path.remove(entry)


def import_target(target: Target) -> ModuleType:
    """Import the target's module (the caller installs stand-ins if any)."""
    if target.is_file:
        return _import_file(target)
    return _import_module(target)


def package_root(path: Path) -> tuple[Path, str] | None:
    """(the directory above the outermost package holding ``path``, the
    module's dotted name) when ``path``'s directory is a package (has an
    ``__init__.py``), else None. pytest's rootdir-relative ("prepend")
    imports find a test module's package the same way."""
    parts = [path.stem] if path.stem != "__init__" else []
    directory = path.parent
    while (directory / "__init__.py").is_file() and directory.name.isidentifier():
        parts.insert(0, directory.name)
        directory = directory.parent
    if directory == path.parent:
        return None
    return directory, ".".join(parts)


def _import_file(target: Target) -> ModuleType:
    path = Path(target.location)
    if not path.exists():
        raise TargetError(f"no such file: {target.location} (target {target.text!r})")
    if not path.is_file():
        raise TargetError(f"{target.location} is not a file (target {target.text!r})")
    path = path.resolve()
    packaged = package_root(path)
    if packaged is not None and packaged[1].split(".", 1)[0] != "vllm":
        # A file inside a vLLM checkout stays a lone file: its vllm imports
        # go to the stand-ins (or the installed vLLM), not to the checkout.
        return _import_packaged(target, path, *packaged)
    name = f"_policyspec_target_{re.sub(r'[^0-9A-Za-z_]', '_', path.stem)}_{next(_counter)}"
    loader = importlib.machinery.SourceFileLoader(name, str(path))
    spec = importlib.util.spec_from_loader(name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__file__ = str(path)
    sys.modules[name] = module
    try:
        with _on_path(str(path.parent)):
            loader.exec_module(module)
    except BaseException as exc:
        sys.modules.pop(name, None)
        raise _import_failure(exc, target, str(path)) from None
    return module


def _import_packaged(target: Target, path: Path, root: Path, dotted: str) -> ModuleType:
    """Import a file that lives in a package by its dotted name, with the
    package's parent directory on sys.path, so that its absolute imports of
    siblings (``from mypkg.common import X``) and relative ones work. A
    package of the same name loaded from elsewhere is dropped first."""
    top = dotted.split(".", 1)[0]
    loaded = sys.modules.get(top)
    if loaded is not None and top not in _PACKAGES and not _within(loaded, root):
        raise TargetError(
            f"{target.location} is module {dotted}, but a package {top} is already imported "
            f"from {getattr(loaded, '__file__', None) or 'elsewhere'}; give the target as "
            f"{dotted}:{target.attr} with {root} as the working directory"
        )
    for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
        if not _within(sys.modules[name], root):  # our own earlier load of another tree
            del sys.modules[name]
    _PACKAGES.add(top)
    try:
        with _on_path(str(root)):
            module = importlib.import_module(dotted)
    except BaseException as exc:
        raise _import_failure(exc, target, str(path)) from None
    if Path(getattr(module, "__file__", "") or "").resolve() != path:
        raise TargetError(
            f"{target.location} is module {dotted} of the package in {root}, but importing "
            f"{dotted} gives {getattr(module, '__file__', None)}"
        )
    return module


_PACKAGES: set[str] = set()
"""Top-level packages this process imported for file targets."""


def _within(module: ModuleType, root: Path) -> bool:
    where = getattr(module, "__file__", None)
    return isinstance(where, str) and Path(where).resolve().is_relative_to(root)


def _import_module(target: Target) -> ModuleType:
    try:
        with _on_path(os.getcwd()):
            return importlib.import_module(target.location)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing and (target.location == missing or target.location.startswith(missing + ".")):
            raise TargetError(
                f"no module named {target.location!r} (target {target.text!r}); "
                "is it installed, or did you mean a path like path/to/file.py:Class?"
            ) from None
        raise _import_failure(exc, target, None) from None
    except BaseException as exc:
        raise _import_failure(exc, target, None) from None


def where_raised(tb: TracebackType | None, path: str | None) -> str:
    """``file:line`` of the policy's frame nearest the error."""
    frames = [
        f for f in traceback.extract_tb(tb)
        if not f.filename.startswith("<frozen") and not f.filename.startswith(_OWN_DIR)
    ]
    if path is not None:
        mine = [f for f in frames if f.filename == path]
        frames = mine or frames
    if not frames:
        return ""
    frame = frames[-1]
    return f"{_short(frame.filename)}:{frame.lineno}: "


_OWN_DIR = str(Path(__file__).resolve().parents[1])


def _short(filename: str) -> str:
    try:
        return os.path.relpath(filename)
    except ValueError:
        return filename


def _import_failure(exc: BaseException, target: Target, path: str | None) -> BaseException:
    """The TargetError for an exception raised while importing the target
    (KeyboardInterrupt goes through unchanged)."""
    if isinstance(exc, KeyboardInterrupt):
        return exc
    if isinstance(exc, SyntaxError):
        where = f"{_short(exc.filename)}:{exc.lineno}: " if exc.filename else ""
        return TargetError(f"{where}syntax error in the policy file: {exc.msg}")
    where = where_raised(exc.__traceback__, path)
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        if exc.name == "vllm" or exc.name.startswith("vllm."):
            if exc.name == "vllm":
                return TargetError(
                    f"{where}the policy imports vllm, which is not installed, and the vLLM "
                    "stand-ins are disabled (--no-stand-in)"
                )
            return TargetError(
                f"{where}the policy imports {exc.name}, which the installed vLLM does not have"
            )
        return TargetError(
            f"{where}the policy imports {exc.name!r}, which is not installed ({exc}): "
            "install it where policyspec runs (the policy's own requirements; spec/check.md)"
        )
    if isinstance(exc, ImportError):
        return TargetError(f"{where}import error in the policy file: {exc}")
    if isinstance(exc, SystemExit):
        return TargetError(f"{where}the policy file called exit({exc.code}) while being imported")
    return TargetError(
        f"{where}importing the policy file raised {type(exc).__name__}: {exc}"
    )


def resolve_class(module: ModuleType, target: Target) -> type:
    """The class the target names inside ``module``."""
    obj: object = module
    for part in target.attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise TargetError(
                f"{target.location} has no class {target.attr!r}{_candidates(module)}"
            ) from None
    if not isinstance(obj, type):
        raise TargetError(
            f"{target.attr!r} in {target.location} is a {type(obj).__name__}, not a class"
        )
    return obj


def _candidates(module: ModuleType) -> str:
    found = sorted(
        name for name, value in vars(module).items()
        if isinstance(value, type)
        and getattr(value, "__module__", None) == module.__name__
        and callable(getattr(value, "evict", None))
    )
    return f" (policy classes there: {', '.join(found)})" if found else ""
