"""``policyspec check --isolate``: the policy under test runs in a child
process (``policyspec.lineproto.serve``) under a memory limit.

The checker survives whatever the policy does to its own process; a child
that dies during a call is reported as API-PROCESS-ALIVE, with the trace.
"""

from __future__ import annotations

import dataclasses
import shlex
import sys
from collections.abc import Sequence

from policyspec.lineproto.remote import ExecTarget
from policyspec.subject import Subject

__all__ = ["DEFAULT_MEMORY_LIMIT_MB", "IsolatedTarget"]

DEFAULT_MEMORY_LIMIT_MB = 4096
"""Address-space limit of the child (MB): far above a sane policy's needs,
low enough that a runaway allocation ends the child, not the machine."""


class IsolatedTarget(ExecTarget):
    """An ExecTarget running a Python policy through the protocol server."""

    def __init__(
        self,
        target: str,
        *,
        api: str | None = None,
        stand_in: bool = True,
        memory_limit_mb: int = DEFAULT_MEMORY_LIMIT_MB,
        timeout: float = 10.0,
        placeholders: Sequence[str] = (),
    ) -> None:
        argv = [sys.executable, "-m", "policyspec.lineproto.serve", target,
                "--memory-limit", str(memory_limit_mb)]
        if api:
            argv += ["--api", api]
        if not stand_in:
            argv.append("--no-stand-in")
        for name in placeholders:
            argv += ["--placeholder", name]
        super().__init__(shlex.join(argv), timeout=timeout)
        self.target = target

    def isolated_subject(self, loaded: Subject) -> Subject:
        """The child-backed subject, named and described like ``loaded`` (the
        same target loaded in this process) so that reports and repro
        snippets name the target, not the command line."""
        return dataclasses.replace(
            self.subject,
            name=loaded.name,
            api=loaded.api,
            placeholders=loaded.placeholders,
            capabilities=self.subject.capabilities | {"isolated"},
            notes=(*loaded.notes, "isolated: the policy ran in a child process "
                   "(policyspec.lineproto.serve) under a memory limit"),
        )
