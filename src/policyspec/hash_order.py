"""The order of sets and dicts of keys is an input of a check, like the
clock and the random stream (spec/environment.md). Bytes keys hash with a
per-process secret, so a policy that acts on a set's order would do other
work in each process. The ``policyspec`` command therefore runs itself,
and every process it starts, under one hash seed (``HASH_SEED``); the
pytest plugin cannot change its process's seed and says so in its header.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

__all__ = ["ENV", "HASH_SEED", "fixed", "run_under_fixed_hash"]

ENV = "PYTHONHASHSEED"
HASH_SEED = "0"
"""The hash seed policyspec runs under: 0 turns the secret off, the value
Python documents for reproducible hashing."""


def fixed() -> bool:
    """Whether this process hashes under ``HASH_SEED``."""
    return sys.flags.hash_randomization == 0


def run_under_fixed_hash(argv: Sequence[str]) -> None:
    """Replace this process by ``python -m policyspec ARGV`` under
    ``HASH_SEED`` unless it already runs under it; return only then (or
    when the platform cannot replace a process: the run goes on with a
    random seed, as before)."""
    if fixed():
        return
    env = {**os.environ, ENV: HASH_SEED}
    command = [sys.executable, *_interpreter_flags(), "-m", "policyspec", *argv]
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(sys.executable, command, env)
    except OSError:
        return


def _interpreter_flags() -> list[str]:
    """The ``-X`` options this interpreter was started with, kept across
    the restart (``-X dev``, ``-X importtime``)."""
    flags = []
    for name, value in sys._xoptions.items():
        flags += ["-X", name if value is True else f"{name}={value}"]
    return flags
