"""Running a failure's snippet before the report is written: a snippet that
was never run is a promise, and one that exits 0 on the faulty policy
would send its reader after a fault that is not there.

``show`` runs the snippet in a fresh Python interpreter (``sys.executable``,
the check's working directory and environment, so the policy file imports
as the check imported it; the snippet installs the vLLM stand-ins itself
when vLLM is absent) with a bounded time limit, and says whether it failed
the way a reproducer must: a non-zero exit with an AssertionError that
names the requirement. One process per reported failure.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import policyspec.hash_order as hash_order

__all__ = [
    "CHILD_FLAG",
    "LIMIT_FACTOR",
    "MIN_LIMIT",
    "RANDOM_HASH",
    "Shown",
    "in_snippet",
    "show",
    "snippet_limit",
    "snippet_target",
    "unshowable",
]

CHILD_FLAG = "POLICYSPEC_SNIPPET_RUN"
"""Set in the snippet's process: a check run there (a snippet that re-runs
an engine) does not run snippets of its own."""
LIMIT_FACTOR = 3.0
"""The snippet's time limit in call time limits: it replays a short trace
twice (written out, then judged), plus the interpreter's start."""
MIN_LIMIT = 20.0
"""Seconds a check gives a snippet at least: starting an interpreter that imports policyspec takes
seconds on a loaded machine, which must not count against the policy."""
SHORT_TRACE = 200
"""Steps a snippet's trace may have before its time limit grows with it: a
sized witness fills thousands of keys, each step judged twice, and on a
loaded machine took longer than the limit of a short one (the limit only
stops a snippet that hangs; none that ends is judged by its time)."""


def snippet_limit(call_limit: float, steps: int) -> float:
    """The seconds a snippet of a ``steps``-step trace may run."""
    return max(MIN_LIMIT, LIMIT_FACTOR * call_limit) * max(1.0, steps / SHORT_TRACE)


RANDOM_HASH = (
    " (the check ran with Python's hash randomisation on, the snippet under "
    f"{hash_order.ENV}={hash_order.HASH_SEED}: a policy that acts on the iteration order of a "
    "set of keys can differ between the two; the policyspec command runs under that seed)")
"""Said of a snippet that passed when the check's own process hashed at
random (the pytest plugin, library use)."""


@dataclass(frozen=True)
class Shown:
    shown: bool
    result: str
    """One sentence: how the run ended."""


def snippet_target(target: str, source: str | None = None) -> str | None:
    """The target a fresh process imports the policy's class by: ``target``
    itself when it is a file path or a module that process can find, the
    module's file (``path.py:Class``) for a class given as an object whose
    module was loaded from a file under a name no import finds (a test's
    own loader; ``source``: the file that defines the class, when known),
    None when there is no way (a class defined inside a function, or in a
    script run as ``__main__``)."""
    module, _, name = target.rpartition(":")
    if not module or not name or "<locals>" in name:
        return None
    if module.endswith(".py") or "/" in module or os.sep in module:
        return target
    if module in ("__main__", "__mp_main__"):
        return None
    loaded = sys.modules.get(module)
    where = getattr(loaded, "__file__", None) or source
    source = where if isinstance(where, str) and where.endswith(".py") else None
    if source is not None and _beside_cwd(source) and not _at_dotted_place(source, module):
        # Under the working directory but imported under another name (a
        # test runner's own path entries), which a fresh process lacks.
        return f"{source}:{name}"
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if found:
        return target
    if source is not None and os.path.isfile(source):
        return f"{source}:{name}"
    return None


def _beside_cwd(path: str) -> bool:
    return Path(path).resolve().is_relative_to(Path.cwd().resolve())


def _at_dotted_place(path: str, module: str) -> bool:
    """True when importing ``module`` from the working directory finds
    ``path`` (as ``policyspec check`` does for a dotted target)."""
    base = Path.cwd().joinpath(*module.split("."))
    resolved = Path(path).resolve()
    return resolved in (base.with_suffix(".py").resolve(), (base / "__init__.py").resolve())


def unshowable(subject_in_child: bool, target: str, source: str | None = None) -> str | None:
    """Why a snippet of this target cannot be run in a fresh process, or
    None: a policy behind ``--exec`` or in a child process is no Python
    class the snippet can import, nor is a class ``snippet_target`` finds
    no import for."""
    if subject_in_child:
        return ("the policy runs in another process (--exec or --isolate), which a Python "
                "snippet cannot import")
    if snippet_target(target, source) is None:
        return (f"the target {target} is a class object a fresh process cannot import "
                "(defined in a function, in a script run as __main__, or loaded from no file)")
    return None


def show(snippet: str, requirement: str, limit: float) -> Shown:
    """Run ``snippet`` in a fresh interpreter for at most ``limit`` seconds
    and judge how it ended (module doc)."""
    env = dict(os.environ)
    env[CHILD_FLAG] = "1"
    # Sets of keys iterate in hash order: the snippet runs under the hash
    # seed the policyspec command runs under (policyspec.hash_order).
    env[hash_order.ENV] = hash_order.HASH_SEED
    with tempfile.NamedTemporaryFile("w", suffix="_repro.py", delete=False,
                                     encoding="utf-8") as handle:
        handle.write(snippet)
        path = handle.name
    try:
        done = subprocess.run(
            [sys.executable, path], capture_output=True, text=True, timeout=limit,
            env=env, cwd=os.getcwd(), stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        return Shown(False, f"it did not end within {limit:g} s in a fresh process (stopped)")
    except OSError as exc:
        return Shown(False, f"a fresh Python process could not be started: {exc}")
    finally:
        os.unlink(path)
    last = _last_line(done.stderr)
    if done.returncode == 0:
        return Shown(False, "it exited 0 in a fresh process: the snippet passes on the "
                            "faulty policy" + ("" if hash_order.fixed() else RANDOM_HASH))
    if last.startswith("AssertionError: ") and (
            last[len("AssertionError: "):].startswith(f"{requirement}:")):
        return Shown(True, f"exit {done.returncode} in a fresh process with {_cut(last)}")
    if done.returncode < 0:
        return Shown(False, f"the fresh process ended by signal {-done.returncode} "
                            f"({_cut(last) or 'no message'})")
    return Shown(False, f"it exited {done.returncode} in a fresh process with "
                        f"{_cut(last) or 'no message'}, not an AssertionError naming "
                        f"{requirement}")


def _last_line(stderr: str) -> str:
    """The exception line of the snippet's traceback: its last
    ``AssertionError`` line (a policy's ``__del__`` may print errors after
    it while the interpreter ends), else the last non-empty line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    asserted = [line for line in lines if line.startswith("AssertionError: ")]
    if asserted:
        return asserted[-1]
    return lines[-1] if lines else ""


def _cut(text: str, most: int = 300) -> str:
    return text if len(text) <= most else text[:most - 3] + "..."


def in_snippet() -> bool:
    """True in a process ``show`` started."""
    return os.environ.get(CHILD_FLAG) == "1"
