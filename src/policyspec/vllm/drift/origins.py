"""Where ``policyspec drift`` reads a vLLM from: the importable one (found
with ``importlib.util.find_spec``, which imports neither vLLM nor its
dependencies), a wheel file (its zip members) or a source tree. Each gives
the text of the files under ``vllm/v1/kv_offload/`` and the version it says
it is; nothing here runs vLLM's code.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

__all__ = ["KV_OFFLOAD", "UnreadableError", "VllmFiles", "open_vllm"]

KV_OFFLOAD = "vllm/v1/kv_offload"
"""The package every file drift reads lives in, as a path in a wheel."""

_MARKER = "cpu/policies/base.py"
"""The file whose presence says a directory is vLLM's kv_offload package."""


class UnreadableError(Exception):
    """The vLLM cannot be read (no such path, no vLLM there, a file missing
    or unparsable): one line, exit 2."""


@dataclass(frozen=True)
class VllmFiles:
    """The ``.py`` files of one vLLM's ``kv_offload`` package, by their path
    inside it (``cpu/policies/base.py``), and where they came from."""

    label: str
    """The path or name the user gave (or ``the importable vllm at ...``)."""
    version: str
    """The version the vLLM says it is; ``unknown`` when it says none."""
    files: dict[str, str]

    def text(self, path: str) -> str:
        """The text of ``path`` (inside kv_offload); UnreadableError if absent."""
        try:
            return self.files[path]
        except KeyError:
            raise UnreadableError(
                f"{self.label}: {KV_OFFLOAD}/{path} is missing (is this vLLM's CPU "
                "offloading package?)"
            ) from None

    def parse(self, path: str) -> ast.Module:
        """``path`` parsed with ``ast``; UnreadableError naming the line when
        it does not parse."""
        try:
            return ast.parse(self.text(path), filename=path)
        except SyntaxError as exc:
            raise UnreadableError(
                f"{self.label}: {KV_OFFLOAD}/{path} does not parse as Python "
                f"(line {exc.lineno}: {exc.msg})"
            ) from None

    def under(self, folder: str) -> list[str]:
        """Every file below ``folder`` (``""``: all), sorted."""
        prefix = f"{folder.rstrip('/')}/" if folder else ""
        return sorted(p for p in self.files if p.startswith(prefix))


def open_vllm(where: str | None) -> VllmFiles:
    """The files of the vLLM at ``where``: None for the importable one, else
    a wheel file or a directory (one holding ``vllm/v1/kv_offload``, the
    ``vllm`` package itself, or the ``kv_offload`` directory)."""
    if where is None:
        return _importable()
    path = Path(where)
    if path.is_dir():
        return _tree(path, where)
    if path.is_file():
        return _wheel(path, where)
    raise UnreadableError(f"{where}: no such file or directory")


def _importable() -> VllmFiles:
    try:
        spec = importlib.util.find_spec("vllm")
    except (ImportError, ValueError) as exc:
        raise UnreadableError(f"cannot locate the importable vllm: {exc}") from None
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations:
        raise UnreadableError(
            "no importable vllm here (give a vLLM wheel file or a source tree: "
            "policyspec drift PATH)"
        )
    package = Path(locations[0])
    label = f"the importable vllm at {package}"
    root = package / "v1" / "kv_offload"
    if not (root / _MARKER).is_file():
        raise UnreadableError(f"{label}: it has no v1/kv_offload/{_MARKER}")
    try:
        version = importlib.metadata.version("vllm")
    except importlib.metadata.PackageNotFoundError:
        version = _version_file(package / "_version.py")
    return VllmFiles(label, version, _read_tree(root, label))


def _tree(path: Path, label: str) -> VllmFiles:
    for root in (path / KV_OFFLOAD, path / "v1" / "kv_offload", path):
        if (root / _MARKER).is_file():
            break
    else:
        raise UnreadableError(
            f"{label}: no vLLM here (looked for {KV_OFFLOAD}/{_MARKER} in it, and for "
            f"{_MARKER} as a kv_offload directory itself)"
        )
    package = root.parent.parent  # kv_offload -> v1 -> vllm
    version = _version_file(package / "_version.py")
    if version == "unknown":
        version = _dist_info_version(package.parent)
    return VllmFiles(label, version, _read_tree(root, label))


def _read_tree(root: Path, label: str) -> dict[str, str]:
    files: dict[str, str] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        try:
            files[rel] = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UnreadableError(f"{label}: cannot read {rel}: {exc}") from None
    return files


def _wheel(path: Path, label: str) -> VllmFiles:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise UnreadableError(f"{label}: not a wheel (a zip file): {exc}") from None
    with archive:
        prefix = f"{KV_OFFLOAD}/"
        members = [
            m for m in archive.namelist() if m.startswith(prefix) and m.endswith(".py")
        ]
        if f"{prefix}{_MARKER}" not in members:
            raise UnreadableError(f"{label}: the wheel has no {prefix}{_MARKER} (not vLLM?)")
        files: dict[str, str] = {}
        for member in members:
            try:
                files[member[len(prefix):]] = archive.read(member).decode("utf-8")
            except (OSError, UnicodeDecodeError, zipfile.BadZipFile) as exc:
                raise UnreadableError(f"{label}: cannot read {member}: {exc}") from None
        version = _wheel_version(archive, path)
    return VllmFiles(label, version, files)


def _wheel_version(archive: zipfile.ZipFile, path: Path) -> str:
    """``Version:`` of the wheel's METADATA, else the file name's version."""
    for member in archive.namelist():
        parts = PurePosixPath(member).parts
        if len(parts) == 2 and parts[0].endswith(".dist-info") and parts[1] == "METADATA":
            version = _metadata_version(archive.read(member).decode("utf-8", "replace"))
            if version:
                return version
    pieces = path.name.split("-")
    return pieces[1] if len(pieces) > 2 and path.suffix == ".whl" else "unknown"


def _metadata_version(text: str) -> str:
    for line in text.splitlines():
        if not line.strip():
            break  # the headers end at the first blank line
        key, _, value = line.partition(":")
        if key.strip().lower() == "version":
            return value.strip()
    return ""


def _dist_info_version(site: Path) -> str:
    """The version of a ``vllm-*.dist-info`` beside the vllm package."""
    for info in sorted(site.glob("vllm-*.dist-info")):
        try:
            version = _metadata_version((info / "METADATA").read_text(encoding="utf-8"))
        except OSError:
            continue
        if version:
            return version
    return "unknown"


def _version_file(path: Path) -> str:
    """``__version__`` (or ``version``) assigned a string in ``vllm/_version.py``,
    read with ``ast``; ``unknown`` when there is none."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return "unknown"
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            names = {t.id for t in node.targets if isinstance(t, ast.Name)}
            if names & {"__version__", "version"} and isinstance(node.value.value, str):
                return node.value.value
    return "unknown"
