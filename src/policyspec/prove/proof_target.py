"""From ``TARGET --profile --abstraction`` to a ``ProofSubject``: the target
is loaded exactly as ``policyspec check`` loads it, so prove and check
judge the same policy. A hand-written pair maps to a model state only, so
it serves core and the profiles whose refinement keeps no state of its own;
the CrossHair child process rebuilds the same subject from ``ENV_*``.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from policyspec.adapters import TargetError, installed, load_subject
from policyspec.adapters.seed import unwrap
from policyspec.adapters.target import parse_target
from policyspec.profiles import get_profile
from policyspec.prove.abstraction import (
    MODULE_ATTRIBUTE,
    Abstraction,
    find_abstraction,
    load_abstraction,
)
from policyspec.prove.commute import ProofSubject

__all__ = [
    "DECLARED",
    "ENV_ABSTRACTION",
    "ENV_PROFILE",
    "ENV_STRICT",
    "ENV_TARGET",
    "ProveUsageError",
    "TargetSpec",
    "from_environment",
    "load_proof_subject",
]

ENV_TARGET = "POLICYSPEC_PROVE_TARGET"
ENV_PROFILE = "POLICYSPEC_PROVE_PROFILE"
ENV_ABSTRACTION = "POLICYSPEC_PROVE_ABSTRACTION"
ENV_STRICT = "POLICYSPEC_PROVE_STRICT"
DECLARED = "declared"
"""``--abstraction declared``: the hand-written pair the policy's module
declares or registers (policyspec.prove.abstraction), instead of the
derived one."""


class ProveUsageError(Exception):
    """A mistake of the user (bad target, profile or pair): exit 2."""


@dataclass(frozen=True)
class TargetSpec:
    """What names a proof subject, as text (it crosses a process boundary)."""

    target: str
    profile: str = "core"
    abstraction: str | None = None
    strict: bool = False

    def environment(self) -> dict[str, str]:
        env = {ENV_TARGET: self.target, ENV_PROFILE: self.profile}
        if self.abstraction:
            env[ENV_ABSTRACTION] = self.abstraction
        if self.strict:
            env[ENV_STRICT] = "1"
        return env


def load_proof_subject(spec: TargetSpec) -> ProofSubject:
    """The policy, its abstraction pair (None when it has none) and the
    profile. Raises ProveUsageError with a one-line message."""
    try:
        profile = get_profile(spec.profile)
    except ValueError as exc:
        raise ProveUsageError(str(exc)) from None
    refinement = profile.refinement
    if spec.abstraction and refinement is not None and refinement.start(1) is not None:
        raise ProveUsageError(
            f"a hand-written pair maps a policy to a model state only; profile "
            f"{spec.profile!r} keeps refinement state beside it: leave --abstraction out "
            "(the derived pair builds that state through the policy's own calls)"
        )
    try:
        # Driven as the profile's revision when it fits it, as check does: a
        # file that fits R9 and R10 is proved under arc-0.33 with its touch.
        subject = load_subject(spec.target).fitted(profile.api)
        with installed():
            cls = type(unwrap(subject.build(1)))
        parsed = parse_target(spec.target)
    except TargetError as exc:
        raise ProveUsageError(str(exc)) from None
    except Exception as exc:  # building the policy failed: no pair can help
        raise ProveUsageError(
            f"{spec.target}: building the policy raised {type(exc).__name__}: {exc}"
        ) from None
    modules = _target_modules(parsed.location, parsed.is_file, parsed.attr, cls)
    pair: Abstraction | None = None
    try:
        if spec.abstraction == DECLARED:
            pair = find_abstraction(cls, modules)
            if pair is None:
                raise ProveUsageError(
                    f"--abstraction {DECLARED}: {spec.target} declares no pair "
                    f"({MODULE_ATTRIBUTE} in its module, or register_abstraction)")
        elif spec.abstraction:
            pair = load_abstraction(spec.abstraction, cls)
    except ValueError as exc:
        raise ProveUsageError(str(exc)) from None
    if pair is not None and parsed.is_file:
        # Say "path/to/file.py", not the name the loader made up for it.
        origin = pair.origin
        for name in (*modules, cls.__module__):
            origin = origin.replace(name, parsed.location)
        pair = replace(pair, origin=origin)
    return ProofSubject(subject, pair, profile, spec.strict)


def _target_modules(location: str, is_file: bool, attr: str, cls: type) -> tuple[str, ...]:
    """Names of the module(s) the target names: where a policy file that
    re-exports a class keeps the pair for it."""
    if not is_file:
        return (location,)
    path = Path(location).resolve()
    found = [
        name
        for name, module in list(sys.modules.items())
        if getattr(module, "__file__", None)
        and Path(str(module.__file__)).resolve() == path
        and getattr(module, attr, None) is cls
    ]
    return tuple(reversed(found))


def from_environment() -> ProofSubject | None:
    """The subject the parent process named in the environment, or None."""
    target = os.environ.get(ENV_TARGET)
    if not target:
        return None
    spec = TargetSpec(
        target,
        os.environ.get(ENV_PROFILE, "core"),
        os.environ.get(ENV_ABSTRACTION) or None,
        os.environ.get(ENV_STRICT) == "1",
    )
    return load_proof_subject(spec)
