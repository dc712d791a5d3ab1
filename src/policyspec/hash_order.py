"""The order of sets and dicts of keys is an input of a check, like the
clock and the random stream (policyspec.environment).

The keys handed to a policy are bytes (vLLM's ``OffloadKey`` format), and
Python hashes bytes with a secret drawn per process unless
``PYTHONHASHSEED`` fixes it. A set of keys (``evict``'s ``protected``, a
set-shaped ``touch``) is iterated in hash order, so a policy that acts on
that order (one that honours the first 1,000 protected keys) does other
work in each process: other checked-call counts, another minimal trace,
even another verdict. So the ``policyspec`` command runs under one hash
seed, ``HASH_SEED``: started without it, it starts itself again with it
(``run_under_fixed_hash``) before doing anything, and every process it
starts (workers, ``--isolate`` children, simulate's cells) inherits it.

The pytest plugin runs in pytest's own process, whose seed it cannot
change: it says so in its header when the seed is not fixed
(``fixed()``), and ``PYTHONHASHSEED=0 pytest ...`` gives the command's
traces.
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
