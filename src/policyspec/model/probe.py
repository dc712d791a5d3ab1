"""Probes: caller actions that make a refinement's hidden state observable.
An exact profile sees a policy's order only through ``evict``, so to name
the operation that went wrong ``policyspec.witness.explain`` runs probes
after each prefix of a failing trace, and a refinement that knows more than
the eviction order says which probes to run. Plain data, so that the model
and the engines share it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from policyspec.model.actions import Action
from policyspec.model.state import State

__all__ = ["PROBE_REQUEST", "Probe", "ProbeResult"]

PROBE_REQUEST = 1 << 30
"""The first request a probe's second access belongs to, for a policy
without touch (no trace names it)."""


@dataclass(frozen=True)
class Probe:
    """Run ``setup`` (caller-legal after the prefix), then ``evict(n,
    protected)``. ``name`` tells the refinement what the probe looks at."""

    name: str
    setup: tuple[Action, ...]
    n: int
    protected: frozenset[int] = frozenset()

    def setup_for(self, touch: bool) -> tuple[Action, ...]:
        """``setup`` for a policy with ``touch``, or else (vLLM 0.34, R10)
        with each touch of keys, a second access, made as 0.34's manager
        sends it: a request that reused them finishes (one fresh request per
        touch, so that each can finish). Every consumer of probes runs them
        through this, so that no probe calls an operation the policy lacks."""
        if touch:
            return self.setup
        out: list[Action] = []
        request = PROBE_REQUEST
        for action in self.setup:
            if action[0] == "touch":
                keys = tuple(action[1])
                out.append(("on_request_finished", request, (keys,), frozenset(),
                            frozenset(keys)))
                request += 1
            else:
                out.append(action)
        return tuple(out)


@dataclass(frozen=True)
class ProbeResult:
    """What a probe gave. ``got``: the policy's victims as model keys, or
    None for a refusal; ``broken``: the policy raised, returned something
    other than a list of present keys, or failed a check during ``setup``.
    ``expected``: the refinement's victims. ``ext`` and ``state``: the
    refinement's and the core model's state right before the final evict,
    so that a refinement can ask what it would have evicted otherwise."""

    probe: Probe
    got: list[int] | None
    expected: list[int] | None
    ext: Any
    state: State
    broken: bool = False

    @property
    def differs(self) -> bool:
        return self.broken or self.got != self.expected

    @property
    def refused(self) -> bool:
        """The policy returned None where the refinement evicts."""
        return not self.broken and self.got is None and self.expected is not None
