"""Policies in any language: a JSON-lines protocol over a child process's
stdin and stdout (spec/protocol.md).

``ExecTarget(command).subject`` is a ``Subject`` like any other: every
engine, ``policyspec check --exec`` and ``policyspec replay --exec`` drive
it. ``child`` holds the process and the line exchange, ``remote`` the
seed-API view of it.
"""

from policyspec.lineproto.child import PROTOCOL, Child, ChildError
from policyspec.lineproto.remote import (
    KEY_FORMATS,
    ExecTarget,
    PolicyError,
    RemoteBlock,
    RemoteKeyError,
    RemotePolicy,
)

__all__ = [
    "KEY_FORMATS",
    "PROTOCOL",
    "Child",
    "ChildError",
    "ExecTarget",
    "PolicyError",
    "RemoteBlock",
    "RemoteKeyError",
    "RemotePolicy",
]
