"""The one error type for user mistakes while loading a target.

A ``TargetError`` means policyspec could not even start checking: a malformed
target, a missing file, module or class, a class without the methods of any
API revision, an import or syntax error inside the policy file. ``str(e)`` is
one line naming the problem; the CLI prints it and exits 2 (spec/design.md).
"""

from __future__ import annotations

__all__ = ["TargetError"]


class TargetError(Exception):
    """A user mistake found while loading a policy; the message is one line."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))
