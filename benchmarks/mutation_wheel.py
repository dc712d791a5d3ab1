"""vLLM's own policy files for the mutation benchmark, read from its wheel.

The in-tree LRU and ARC of a vLLM release are mutated as shipped, so their
text is taken from the release's wheel when the benchmark runs and never
kept in this repository: ``pip download vllm==VERSION --no-deps`` into a
cache directory (the user's cache, or ``--wheel-dir``), reused on the next
run, and the policy files read from the zip without installing or
importing vLLM (policyspec's stand-ins answer their imports).
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

__all__ = ["POLICIES", "VERSION", "WheelUnavailable", "default_wheel_dir", "policy_source",
           "wheel"]

VERSION = "0.34.0"
POLICIES = "vllm/v1/kv_offload/cpu/policies/"
"""Where the in-tree policies live inside the wheel (0.33.0 and 0.34.0)."""


class WheelUnavailable(RuntimeError):
    """The wheel is neither in the directory nor downloadable (offline, or
    no pip): the message is one line saying which and what to do."""


def default_wheel_dir() -> Path:
    """``$XDG_CACHE_HOME/policyspec/vllm-wheels`` (``~/.cache`` without it):
    a wheel of a quarter gigabyte is fetched once per machine, not per run."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "policyspec" / "vllm-wheels"


def _found(directory: Path, version: str) -> Path | None:
    wheels = sorted(directory.glob(f"vllm-{version}-*.whl"))
    return wheels[0] if wheels else None


def wheel(directory: Path | None = None, version: str = VERSION, *,
          download: bool = True) -> Path:
    """The path of vLLM ``version``'s wheel in ``directory`` (default: the
    user's cache), downloaded there first when it is missing and
    ``download``. Raises WheelUnavailable when it cannot be had."""
    where = directory or default_wheel_dir()
    found = _found(where, version) if where.is_dir() else None
    if found is not None:
        return found
    if not download:
        raise WheelUnavailable(f"no vllm-{version}-*.whl in {where} (downloading is off)")
    try:
        where.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WheelUnavailable(f"cannot create the wheel directory {where}: {exc}") from None
    done = subprocess.run(
        [sys.executable, "-m", "pip", "download", f"vllm=={version}", "--no-deps",
         "--only-binary", ":all:", "--disable-pip-version-check", "-q", "-d", str(where)],
        capture_output=True, text=True, check=False)
    found = _found(where, version)
    if done.returncode != 0 or found is None:
        lines = [line.strip() for line in (done.stderr + done.stdout).splitlines()
                 if line.strip() and "is ignored" not in line]
        why = lines[-1] if lines else f"pip exited with {done.returncode}"
        raise WheelUnavailable(
            f"cannot download vllm=={version} with pip (offline?): {why[:200]}; put "
            f"vllm-{version}-*.whl in {where} or give --wheel-dir DIR holding it")
    return found


def policy_source(path: Path, name: str) -> str:
    """The text of ``POLICIES + name`` in the wheel at ``path``."""
    member = POLICIES + name
    try:
        with zipfile.ZipFile(path) as archive:
            return archive.read(member).decode("utf-8")
    except (OSError, zipfile.BadZipFile, KeyError) as exc:
        raise WheelUnavailable(f"{path}: cannot read {member}: {exc}") from None
