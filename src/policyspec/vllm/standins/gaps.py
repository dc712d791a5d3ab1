"""Errors that are policyspec's own gaps, not the policy's faults: a policy
call that reaches a vLLM name the stand-ins do not model says nothing about
the policy. Every place that turns a call's exception into a finding asks
``raise_if_gap`` first; ``StandinGap`` derives from ``BaseException`` so no
``except Exception`` on the way can make it a verdict, and every command
reports it as exit 2 with one line naming the name and the remedy."""

from __future__ import annotations

import traceback
from pathlib import Path
from types import ModuleType

from policyspec.vllm.standins import keys, policies
from policyspec.vllm.standins.placeholders import PlaceholderUsedError, StandinModule

__all__ = ["StandinGap", "gap_of", "raise_if_gap"]

_OWN_DIR = str(Path(__file__).resolve().parents[2])
_STANDINS = "policyspec.vllm.standins"
_INTREE = "policyspec.vllm.standins.intree"


class StandinGap(BaseException):
    """A policy call reached something policyspec's vLLM stand-ins lack;
    ``str()`` is the one line a command prints before exiting 2."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


_LEFT_OUT: dict[type, frozenset[str]] = {
    policies.BlockStatus: frozenset(),
    policies.ChunkStatus: frozenset(),
    keys.ReqContext: frozenset({"load_tier_filter"}),
}
"""Stand-in records whose instances have vLLM's fields (tests compare them
with vLLM's), each with the names of vLLM's it leaves out: any other name
such a record lacks, vLLM's lacks too, and reading it is the policy's fault."""


def _frames(exc: BaseException) -> list[traceback.FrameSummary]:
    """The policy's frames of the error (outside policyspec), outermost first."""
    return [f for f in traceback.extract_tb(exc.__traceback__)
            if not f.filename.startswith(("<", _OWN_DIR))]


def _where(exc: BaseException) -> str:
    """``file:line: `` of the frame nearest the error outside policyspec."""
    frames = _frames(exc)
    if not frames:
        return ""
    return f"{Path(frames[-1].filename).name}:{frames[-1].lineno}: "


def _entry(exc: BaseException) -> str:
    """The policy's method policyspec called (its outermost frame)."""
    frames = _frames(exc)
    return f"{frames[0].name}" if frames else "a call of the policy"


def _standin_class(cls: type) -> bool:
    return cls.__module__.startswith(_STANDINS) and cls is not StandinModule


def _lacking(obj: object, name: str) -> str | None:
    """What lacks the attribute ``name``, when ``obj`` (an AttributeError's
    object) is a stand-in module, a stand-in class, an instance of one (a
    record only for a name it leaves out), a ``super()`` reaching a stand-in
    base, or a policy deriving from a stand-in in-tree policy."""
    if isinstance(obj, StandinModule):
        return f"policyspec's stand-in module {obj.__name__}"
    if isinstance(obj, ModuleType):
        return None
    if isinstance(obj, super):
        this = getattr(obj, "__thisclass__")  # noqa: B009 - not in typeshed's super
        owner = getattr(obj, "__self_class__")  # noqa: B009
        if owner is None:
            return None
        # The policy's own classes after ``this`` lack the name too (the
        # lookup failed); a stand-in among the bases is what was meant to
        # have it.
        rest = owner.__mro__[owner.__mro__.index(this) + 1 :]
        standins = [c for c in rest if _standin_class(c)]
        if not standins:
            return None
        home = getattr(standins[0], "_policyspec_standin", standins[0].__module__)
        return f"policyspec's stand-in {standins[0].__name__} (for {home}), reached by super()"
    cls = obj if isinstance(obj, type) else type(obj)
    if cls in _LEFT_OUT and not isinstance(obj, type):
        return f"policyspec's stand-in {cls.__name__}" if name in _LEFT_OUT[cls] else None
    if _standin_class(cls):
        home = getattr(cls, "_policyspec_standin", "vLLM")
        return f"policyspec's stand-in {cls.__name__} (for {home})"
    # A policy deriving from a stand-in in-tree policy that reads a field
    # of vLLM's class the stand-in does not keep (it keeps vLLM's public
    # state only: the LRU's chunks, the ARC's t1, t2, b1, b2 and target).
    intree = [c for c in cls.__mro__ if c.__module__ == _INTREE]
    if intree:
        return (f"policyspec's stand-in {intree[0].__name__} (vLLM's in-tree policy, whose "
                "behaviour and public state it models, not its private fields)")
    return None


def gap_of(exc: BaseException, call: str | None = None) -> str | None:
    """The one-line message when ``exc``, raised by ``call`` (default: the
    policy's method the traceback enters first), is policyspec's own gap
    (module doc); None when it is the policy's."""
    if isinstance(exc, StandinGap):
        return exc.message
    if call is None:
        call = _entry(exc)
    if isinstance(exc, PlaceholderUsedError):
        short = exc.name.split("(")[0].rsplit(".", 1)[-1]
        return (
            f"{_where(exc)}{call} uses {exc.name}, a vLLM name policyspec's stand-ins do not "
            "model (vLLM is not installed): policyspec, not the policy, cannot go on; check "
            "the policy where vLLM is installed, or keep the name an inert placeholder "
            f"(--placeholder {short}; the verdict then says so)"
        )
    if isinstance(exc, AttributeError) and exc.name is not None:
        lacking = _lacking(exc.obj, exc.name)
        if lacking is not None:
            return (
                f"{_where(exc)}{call} reads {exc.name}, which {lacking} does not define "
                "(vLLM is not installed): policyspec, not the policy, cannot go on; check "
                "the policy where vLLM is installed"
            )
    return None


def raise_if_gap(exc: BaseException, call: str | None = None) -> None:
    """Raise ``StandinGap`` when ``exc`` is policyspec's own gap; return
    otherwise (the caller then judges the exception as the policy's)."""
    message = gap_of(exc, call)
    if message is not None:
        raise StandinGap(message) from exc
